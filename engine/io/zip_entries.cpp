#include "engine/io/zip_entries.h"

#include <quazip/quazip.h>
#include <quazip/quazipfile.h>
#include <quazip/quazipfileinfo.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <cstdint>

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "engine/core/checked_file.h"
#include "engine/io/checkpoint_manifest.h"  // CheckpointError
#include "engine/train/memory_estimate.h"  // hostMemoryAvailable

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

// Deflate cannot expand data more than 1032 to 1 (a 258-byte match costs at least two bits), and
// a stored entry holds its bytes as they are. Checked against the compressed size (which must
// fit in the file), the declared size bounds what a reader allocates by what the file holds: a
// 4 KB zip that declares a 4 GB entry was otherwise given a 4 GB buffer before the first read.
std::string sizeCannotBeTrue(const QuaZipFileInfo64& info, std::int64_t fileBytes) {
  const auto declared = static_cast<std::int64_t>(info.uncompressedSize);
  const auto compressed = static_cast<std::int64_t>(info.compressedSize);
  const std::string sizes = "declares " + std::to_string(declared) + " bytes uncompressed from " +
                            std::to_string(compressed) + " compressed";
  if (compressed < 0 || compressed > fileBytes)
    return "declares " + std::to_string(compressed) + " compressed bytes, more than the " +
           std::to_string(fileBytes) + "-byte file holds";
  if (info.method == 0 && declared != compressed) return sizes + ", but it is stored uncompressed";
  constexpr std::int64_t kMaxDeflateRatio = 1032;
  if (info.method == Z_DEFLATED && declared > compressed * kMaxDeflateRatio + 1024)
    return sizes + ", more than deflate can hold (1032 to 1)";
  if (info.method != 0 && info.method != Z_DEFLATED)
    return "compression method " + std::to_string(info.method) + " (AMP Studio reads stored and deflated entries)";
  return {};
}

}  // namespace

// QuaZip writes through a QIODevice; this one writes straight to an AtomicFile's descriptor
// and keeps the errno of a failed write, so a full disk is reported as "No space left on
// device" (QSaveFile had said "Unknown error"), and nothing is renamed into place unless every
// byte was written and synced.
class AtomicFileDevice : public QIODevice {
 public:
  explicit AtomicFileDevice(AtomicFile& f) : m_file(f) {}
  bool isSequential() const override { return false; }
  bool seek(qint64 pos) override {
    if (::lseek(m_file.fd(), static_cast<off_t>(pos), SEEK_SET) < 0) {
      m_errno = errno;
      return false;
    }
    return QIODevice::seek(pos);
  }
  qint64 size() const override {
    struct stat st {};
    return ::fstat(m_file.fd(), &st) == 0 ? static_cast<qint64>(st.st_size) : 0;
  }
  int lastErrno() const { return m_errno; }

 protected:
  qint64 readData(char*, qint64) override { return -1; }
  qint64 writeData(const char* data, qint64 n) override {
    qint64 done = 0;
    while (done < n) {
      const ssize_t w = ::write(m_file.fd(), data + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        m_errno = w < 0 ? errno : EIO;
        return -1;
      }
      done += w;
    }
    return done;
  }

 private:
  AtomicFile& m_file;
  int m_errno = 0;
};

void writeZipAtomically(const QString& path, const std::vector<ZipEntry>& entries) {
  const std::string target = path.toStdString();
  try {
    makeFolders(QFileInfo(path).absolutePath().toStdString());
  } catch (const OutputError& e) {
    fail(path, std::string("cannot create its folder (") + e.what() + ")");
  }
  try {
    AtomicFile file(target);
    AtomicFileDevice out(file);
    out.open(QIODevice::WriteOnly | QIODevice::Unbuffered);
    // The first failure's own reason: the system's (errno) when a write failed, else QuaZip's.
    auto zipFailure = [&](const std::string& what, int zipError) {
      if (out.lastErrno() != 0) file.fail(what, out.lastErrno());
      fail(path, what + " (zip error " + std::to_string(zipError) + ")");
    };
    {
      QuaZip zip(&out);
      zip.setAutoClose(false);
      zip.setUtf8Enabled(true);
      qint64 total = 0;
      for (const auto& e : entries) total += e.data.size();
      zip.setZip64Enabled(total > 0xF0000000LL);  // classic zip fields end at 4 GiB
      if (!zip.open(QuaZip::mdCreate)) zipFailure("cannot create the zip", zip.getZipError());
      for (const auto& e : entries) {
        QuaZipNewInfo info(e.name);
        info.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                            QFileDevice::ReadOther);
        QuaZipFile f(&zip);
        const int method = e.compress ? Z_DEFLATED : 0;
        const int level = e.compress ? Z_DEFAULT_COMPRESSION : 0;
        if (!f.open(QIODevice::WriteOnly, info, nullptr, 0, method, level))
          zipFailure(e.name.toStdString() + ": cannot add the entry", f.getZipError());
        const bool written = f.write(e.data) == e.data.size();
        f.close();
        if (!written || f.getZipError() != ZIP_OK)
          zipFailure(e.name.toStdString() + ": cannot write the entry", f.getZipError());
      }
      zip.close();
      if (zip.getZipError() != ZIP_OK || out.lastErrno() != 0)
        zipFailure("cannot finish the zip", zip.getZipError());
    }
    file.commit();
  } catch (const OutputError& e) {
    // Checkpoint callers catch CheckpointError; the message already names the file and reason.
    throw CheckpointError(e.what());
  }
}

std::map<QString, QByteArray> readZipEntries(const QString& path, const QStringList& only,
                                             const ZipReadLimits& limits) {
  if (auto problem = regularFileProblem(path.toStdString())) fail(path, *problem);
  if (!endsWithOwnZipDirectory(path))
    fail(path, "not a zip archive, or a truncated one (it does not end with its zip directory)");
  const std::int64_t fileBytes = QFileInfo(path).size();
  QuaZip zip(path);
  zip.setUtf8Enabled(true);
  if (!zip.open(QuaZip::mdUnzip))
    fail(path, "not a zip archive, or a truncated one (no readable zip directory)");
  std::int64_t maxTotal = limits.maxTotalBytes;
  if (maxTotal <= 0) {
    maxTotal = std::int64_t{16} << 30;
    if (auto available = hostMemoryAvailable()) maxTotal = std::min(maxTotal, *available);
  }

  // First the directory alone: every name and declared size is checked before anything is
  // inflated, so a bomb is refused having cost a few kilobytes of reading.
  std::vector<std::pair<QString, std::int64_t>> wanted;
  std::int64_t total = 0;
  QStringList seen;
  for (bool more = zip.goToFirstFile(); more; more = zip.goToNextFile()) {
    QuaZipFileInfo64 info;
    if (!zip.getCurrentFileInfo(&info))
      fail(path, "corrupted zip directory (zip error " + std::to_string(zip.getZipError()) + ")");
    const QString& name = info.name;
    const std::string shown = name.left(200).toStdString();
    if (seen.contains(name)) fail(path, shown + ": the entry appears twice");
    seen.append(name);
    const bool requested = only.isEmpty() || only.contains(name);
    if (!requested) {
      if (!limits.allowedNames.isEmpty() && !limits.allowedNames.contains(name))
        fail(path, shown + ": unexpected entry (not one AMP Studio writes here)");
      continue;
    }
    const auto declared = static_cast<std::int64_t>(info.uncompressedSize);
    if (const std::string why = sizeCannotBeTrue(info, fileBytes); !why.empty()) fail(path, shown + ": " + why);
    const auto exact = limits.exactBytes.find(name);
    if (exact != limits.exactBytes.end() && declared != exact->second)
      fail(path, shown + ": declares " + std::to_string(declared) + " bytes, but manifest.json lists " +
                     std::to_string(exact->second) + " (the entry was changed after it was written)");
    if (declared < 0 || declared > limits.maxEntryBytes)
      fail(path, shown + ": declares " + std::to_string(declared) + " bytes uncompressed, more than the " +
                     std::to_string(limits.maxEntryBytes) + " an entry may hold");
    total += declared;
    if (total > maxTotal)
      fail(path, "its entries declare more than " + std::to_string(maxTotal) +
                     " bytes uncompressed in all (the memory there is to read them into)");
    wanted.emplace_back(name, declared);
  }
  if (zip.getZipError() != UNZ_OK)
    fail(path, "corrupted zip directory (zip error " + std::to_string(zip.getZipError()) + ")");

  std::map<QString, QByteArray> out;
  for (const auto& [name, declared] : wanted) {
    const std::string shown = name.left(200).toStdString();
    if (!zip.setCurrentFile(name, QuaZip::csSensitive))
      fail(path, shown + ": corrupted entry (cannot find it again, zip error " +
                     std::to_string(zip.getZipError()) + ")");
    QuaZipFile f(&zip);
    if (!f.open(QIODevice::ReadOnly))
      fail(path, shown + ": corrupted entry (cannot open it, zip error " + std::to_string(f.getZipError()) + ")");
    // Never more than declared: read into a buffer of that size and look for one byte more.
    QByteArray data(static_cast<qsizetype>(declared), Qt::Uninitialized);
    qint64 got = 0;
    while (got < declared) {
      const qint64 n = f.read(data.data() + got, declared - got);
      if (n <= 0) break;
      got += n;
    }
    char extra;
    const bool longer = got == declared && f.read(&extra, 1) > 0;
    f.close();  // checks the CRC-32 of what was read
    if (longer || f.getZipError() != UNZ_OK || got != declared)
      fail(path, shown + ": corrupted entry (" +
                     (longer ? std::string("more data than its declared size")
                      : f.getZipError() == UNZ_CRCERROR
                          ? std::string("CRC-32 mismatch")
                          : "read " + std::to_string(got) + " of " + std::to_string(declared) + " bytes") +
                     ")");
    out.emplace(name, std::move(data));
  }
  return out;
}

}  // namespace amp
