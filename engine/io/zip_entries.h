// The zip side of checkpoints, through QuaZip: whole entries in and out of memory. Writing goes
// through a QSaveFile (a temporary file renamed over the target on commit), so a crash or a kill
// at any moment leaves either the previous file or the complete new one, never half of one.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace amp {

struct ZipEntry {
  QString name;
  QByteArray data;
  bool compress = true;  // false: stored (raw tensor bytes hardly compress; storing is faster)
};

// Throws CheckpointError("PATH: ...") when the folder, the temporary file or the zip cannot be
// written; the target is then left as it was.
void writeZipAtomically(const QString& path, const std::vector<ZipEntry>& entries);

// What a reader lets an archive inflate, checked against the sizes the zip directory declares
// before any entry is inflated (a 2 MB zip can declare, and hold, gigabytes of zeros), and
// again while inflating (minizip stops at the declared size).
struct ZipReadLimits {
  std::int64_t maxEntryBytes = std::int64_t{4} << 30;  // one entry
  std::int64_t maxTotalBytes = 0;  // all entries read; 0: the host's available memory, at most 16 GiB
  // Entries that must declare exactly these sizes (a checkpoint's manifest lists them).
  std::map<QString, std::int64_t> exactBytes;
  // Refuse entries that are neither in `only` nor allowed here (empty: any name is allowed).
  QStringList allowedNames;
};

// Reads the named entries (all of them when `only` is empty), checking each entry's CRC-32.
// Entries in `only` that the archive lacks are simply absent from the result. Throws
// CheckpointError("PATH: ...") for a missing or non-regular file, a file that is not a zip (or
// is truncated), a corrupted entry, a name that appears twice, and an entry (or all of them)
// larger than `limits` allows.
std::map<QString, QByteArray> readZipEntries(const QString& path, const QStringList& only = {},
                                             const ZipReadLimits& limits = {});

}  // namespace amp
