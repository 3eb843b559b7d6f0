// Run bundles: one run in one zip, to attach to a bug report or a lab write-up.
//
//   config.json, metrics.jsonl, histograms.jsonl, events.log, summary.json   (as a run folder)
//   charts/<name>.png|svg|pdf   the dashboard's charts, rendered by the app
//   checkpoint.zip              the run's latest checkpoint (optional)
//
// Written atomically; read back with openAnything() (experiment_file.h).
#pragma once

#include <QByteArray>
#include <QString>
#include <map>

#include "engine/io/experiment_file.h"

namespace amp {

// charts: file name ("loss.png") -> bytes; the name must end in .png, .svg or .pdf and hold no
// folder. checkpointZip empty: the file at r.checkpointPath if set, else no checkpoint. Throws
// ExperimentError (a bad chart name, an unreadable checkpoint, a zip that cannot be written).
void writeRunBundle(const QString& zipPath, const RunRecord& r, const std::map<QString, QByteArray>& charts,
                    const QByteArray& checkpointZip);

// Whether a zip's entries look like a run bundle (run files at the top level).
bool isRunBundle(const std::map<QString, QByteArray>& entries);

// The run of a bundle whose entries were read from `path` (for messages). Every run file must
// be there. Throws ExperimentError naming the entry.
ExperimentRun runBundleFromEntries(const QString& path, const std::map<QString, QByteArray>& entries);

}  // namespace amp
