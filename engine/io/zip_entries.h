// The zip side of checkpoints, through QuaZip: whole entries in and out of memory. Writing goes
// through a QSaveFile (a temporary file renamed over the target on commit), so a crash or a kill
// at any moment leaves either the previous file or the complete new one, never half of one.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
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

// Reads the named entries (all of them when `only` is empty), checking each entry's CRC-32.
// Entries in `only` that the archive lacks are simply absent from the result. Throws
// CheckpointError("PATH: ...") for a missing file, a file that is not a zip (or is truncated),
// a corrupted entry or a name that appears twice.
std::map<QString, QByteArray> readZipEntries(const QString& path, const QStringList& only = {});

}  // namespace amp
