// What the fuzz targets share: a scratch folder for the loaders that read files, the split of one
// input into several files or zip entries, and a loud stop for a broken property.
//
// Multi-file inputs are text-friendly, so seeds stay readable and libFuzzer's mutations and
// dictionaries work on the contents: parts are separated by three ASCII record separators and a
// newline ("\x1e\x1e\x1e\n": one 0x1E alone turned up inside tensor bytes), and a zip entry is
// "<name>\n<bytes>". A property failure calls fail(), which aborts: libFuzzer
// saves the input as a crash, exactly like a sanitizer report.
#pragma once

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QList>
#include <QString>
#include <QTemporaryDir>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "engine/io/zip_entries.h"

namespace amp::fuzz {

inline const QByteArray kPartSeparator = QByteArrayLiteral("\x1e\x1e\x1e\n");

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "FUZZ PROPERTY BROKEN: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// The harness's own problems (a full disk) are not findings in the parser, but must not pass
// silently either.
inline void require(bool ok, const std::string& what) {
  if (!ok) fail("harness: " + what);
}

// With AMP_FUZZ_VERBOSE set, the harnesses print why an input was refused: to check that the
// seeds get as deep as they should (run the target on the corpus with -runs=0).
inline void refused(const std::exception& e) {
  static const bool verbose = std::getenv("AMP_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "refused: %s\n", e.what());
}

inline QByteArray bytesOf(const std::uint8_t* data, std::size_t size) {
  return QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
}

// One folder per process, removed at exit. tmpfs (/dev/shm) when there is one: every execution
// writes files, and a disk would make that the bottleneck.
inline const QString& scratchDir() {
  static QTemporaryDir dir = [] {
    const QString base = QFileInfo(QStringLiteral("/dev/shm")).isWritable() ? QStringLiteral("/dev/shm")
                                                                             : QDir::tempPath();
    return QTemporaryDir(base + QStringLiteral("/ampfuzz-XXXXXX"));
  }();
  require(dir.isValid(), "cannot create a scratch folder");
  static const QString path = dir.path();
  return path;
}

inline QString scratchPath(const QString& name) { return scratchDir() + QLatin1Char('/') + name; }

inline void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  require(f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size(),
          "cannot write " + path.toStdString());
}

// A fresh, empty folder at `path` (what the previous execution left there is removed).
inline QString freshDir(const QString& path) {
  QDir d(path);
  if (d.exists()) require(d.removeRecursively(), "cannot clear " + path.toStdString());
  require(QDir().mkpath(path), "cannot create " + path.toStdString());
  return path;
}

inline QList<QByteArray> splitParts(const QByteArray& bytes) {
  QList<QByteArray> parts;
  qsizetype from = 0;
  for (qsizetype at; (at = bytes.indexOf(kPartSeparator, from)) >= 0; from = at + kPartSeparator.size())
    parts.append(bytes.mid(from, at - from));
  parts.append(bytes.mid(from));
  return parts;
}

// The parts joined (what splitParts takes apart); for the seed generator, which must not write
// a part that holds the separator itself.
inline QByteArray joinParts(const QList<QByteArray>& parts) {
  QByteArray out;
  for (qsizetype i = 0; i < parts.size(); ++i) {
    require(!parts[i].contains(kPartSeparator), "a part holds the separator");
    out += (i ? kPartSeparator : QByteArray()) + parts[i];
  }
  return out;
}

// "<name>\n<bytes>" parts as zip entries (a part without a name is dropped). Stored, not
// deflated: writing stays cheap, and compression is not what the reader is fuzzed for here
// (fuzz_zip_entries feeds raw zip bytes).
inline std::vector<ZipEntry> entriesFromParts(const QByteArray& bytes) {
  std::vector<ZipEntry> entries;
  for (const QByteArray& part : splitParts(bytes)) {
    const qsizetype nl = part.indexOf('\n');
    const QByteArray name = nl < 0 ? part : part.left(nl);
    if (name.isEmpty()) continue;
    entries.push_back({QString::fromUtf8(name), nl < 0 ? QByteArray() : part.mid(nl + 1), false});
  }
  return entries;
}

inline QByteArray partsFromEntries(const std::vector<std::pair<QString, QByteArray>>& entries) {
  QList<QByteArray> parts;
  for (const auto& [name, data] : entries) parts.append(name.toUtf8() + '\n' + data);
  return joinParts(parts);
}

}  // namespace amp::fuzz
