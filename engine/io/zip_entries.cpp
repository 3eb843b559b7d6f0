#include "engine/io/zip_entries.h"

#include <quazip/quazip.h>
#include <quazip/quazipfile.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include "engine/io/checkpoint_manifest.h"  // CheckpointError

namespace amp {

namespace {

[[noreturn]] void fail(const QString& path, const std::string& what) {
  throw CheckpointError(path.toStdString() + ": " + what);
}

std::uint32_t le(const QByteArray& b, qsizetype at, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(b[at + i]);
  return v;
}

// minizip looks for the end-of-central-directory record anywhere in the last 64 KiB, so a file
// cut short just after a stored entry that is itself a zip (checkpoint.zip) would open as that
// inner zip. A whole zip ends with its own record: the record's comment reaches the end of the
// file and its central directory lies right before it (zip64 offsets are not checked).
bool endsWithOwnZipDirectory(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return true;  // readZipEntries reports it
  constexpr qint64 kRecord = 22;
  const qint64 tailSize = std::min<qint64>(f.size(), kRecord + 0xFFFF);
  if (!f.seek(f.size() - tailSize)) return true;
  const QByteArray tail = f.read(tailSize);
  for (qsizetype p = tail.size() - kRecord; p >= 0; --p) {
    if (le(tail, p, 4) != 0x06054b50u || p + kRecord + le(tail, p + 20, 2) != tail.size()) continue;
    const std::uint32_t dirSize = le(tail, p + 12, 4), dirOffset = le(tail, p + 16, 4);
    if (dirOffset == 0xFFFFFFFFu || dirSize == 0xFFFFFFFFu) return true;
    return qint64(dirOffset) + dirSize == f.size() - tailSize + p;
  }
  return false;
}

}  // namespace

void writeZipAtomically(const QString& path, const std::vector<ZipEntry>& entries) {
  const QString dir = QFileInfo(path).absolutePath();
  if (!QDir().mkpath(dir)) fail(path, "cannot create the folder " + dir.toStdString());
  QSaveFile out(path);
  if (!out.open(QIODevice::WriteOnly)) fail(path, "cannot write (" + out.errorString().toStdString() + ")");
  {
    QuaZip zip(&out);
    // QuaZip must not close the QSaveFile: only commit() below may make the new file visible,
    // and only after every entry was written completely.
    zip.setAutoClose(false);
    zip.setUtf8Enabled(true);
    qint64 total = 0;
    for (const auto& e : entries) total += e.data.size();
    zip.setZip64Enabled(total > 0xF0000000LL);  // classic zip fields end at 4 GiB
    if (!zip.open(QuaZip::mdCreate))
      fail(path, "cannot create the zip (error " + std::to_string(zip.getZipError()) + ")");
    for (const auto& e : entries) {
      QuaZipNewInfo info(e.name);
      info.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                          QFileDevice::ReadOther);
      QuaZipFile f(&zip);
      const int method = e.compress ? Z_DEFLATED : 0;
      const int level = e.compress ? Z_DEFAULT_COMPRESSION : 0;
      if (!f.open(QIODevice::WriteOnly, info, nullptr, 0, method, level))
        fail(path, e.name.toStdString() + ": cannot add the entry (zip error " + std::to_string(f.getZipError()) + ")");
      const bool written = f.write(e.data) == e.data.size();
      f.close();
      if (!written || f.getZipError() != ZIP_OK)
        fail(path, e.name.toStdString() + ": cannot write the entry (" + out.errorString().toStdString() + ")");
    }
    zip.close();
    if (zip.getZipError() != ZIP_OK)
      fail(path, "cannot finish the zip (error " + std::to_string(zip.getZipError()) + ")");
  }
  if (!out.commit()) fail(path, "cannot write (" + out.errorString().toStdString() + ")");
}

std::map<QString, QByteArray> readZipEntries(const QString& path, const QStringList& only) {
  const QFileInfo fi(path);
  if (!fi.exists()) fail(path, "no such file");
  if (!fi.isFile()) fail(path, "not a file");
  if (!endsWithOwnZipDirectory(path))
    fail(path, "not a zip archive, or a truncated one (it does not end with its zip directory)");
  QuaZip zip(path);
  zip.setUtf8Enabled(true);
  if (!zip.open(QuaZip::mdUnzip))
    fail(path, "not a zip archive, or a truncated one (no readable zip directory)");
  std::map<QString, QByteArray> out;
  QStringList seen;
  for (bool more = zip.goToFirstFile(); more; more = zip.goToNextFile()) {
    const QString name = zip.getCurrentFileName();
    if (seen.contains(name)) fail(path, name.toStdString() + ": the entry appears twice");
    seen.append(name);
    if (!only.isEmpty() && !only.contains(name)) continue;
    QuaZipFile f(&zip);
    if (!f.open(QIODevice::ReadOnly))
      fail(path, name.toStdString() + ": corrupted entry (cannot open it, zip error " +
                     std::to_string(f.getZipError()) + ")");
    const qint64 expected = f.usize();
    QByteArray data = f.readAll();
    f.close();  // checks the CRC-32 of what was read
    if (f.getZipError() != UNZ_OK || data.size() != expected)
      fail(path, name.toStdString() + ": corrupted entry (" +
                     (f.getZipError() == UNZ_CRCERROR ? std::string("CRC-32 mismatch")
                                                      : "read " + std::to_string(data.size()) + " of " +
                                                            std::to_string(expected) + " bytes") + ")");
    out.emplace(name, std::move(data));
  }
  if (zip.getZipError() != UNZ_OK)
    fail(path, "corrupted zip directory (zip error " + std::to_string(zip.getZipError()) + ")");
  return out;
}

}  // namespace amp
