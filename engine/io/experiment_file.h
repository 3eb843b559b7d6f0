// Experiment files (.ampx): the runs of a session in one zip, to reopen later or send along.
//
//   manifest.json                 {"format": "ampstudio-experiment", "version": 1,
//                                  "app_version": "0.1.0", "created": "<ISO 8601 UTC>",
//                                  "runs": [{"name", "color": "#rrggbb", "visible", "folder":
//                                  "runs/0-fp32", "status", "checkpoint": true|false,
//                                  "archived": true (only when set aside)}, ...]}
//   runs/<i>-<safe name>/config.json, metrics.jsonl, histograms.jsonl, events.log, summary.json
//                                 (summary.json also holds the run's "group", "tags", "note")
//   runs/<i>-<safe name>/checkpoint.zip   the run's latest checkpoint, when "checkpoint" is true
//
// The run files are exactly a CLI run folder's (run_record.h). The zip is written atomically
// (zip_entries.h): a crash while saving leaves the previous file intact.
#pragma once

#include <QByteArray>
#include <QString>
#include <stdexcept>
#include <vector>

#include "engine/io/run_record.h"

namespace amp {

// One line naming the file and the entry ("x.ampx: runs/0-fp32/metrics.jsonl:12: ...").
class ExperimentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr const char* kExperimentFormat = "ampstudio-experiment";
inline constexpr int kExperimentVersion = 1;  // bumped when a version-1 reader would misread
inline constexpr const char* kExperimentManifest = "manifest.json";
inline constexpr const char* kEmbeddedCheckpoint = "checkpoint.zip";

struct ExperimentRun {
  RunRecord record;
  QString color;             // "#rrggbb" (or "#rrggbbaa"); "" = let the app pick one
  bool visible = true;       // overlaid in the charts
  QByteArray checkpointZip;  // the checkpoint's bytes; empty = none
  bool archived = false;     // set aside (the app's clean slate): in no chart, restorable
};

// Writes every run. A run without checkpointZip but with a record.checkpointPath (a run loaded
// from a CLI folder) embeds that file. Throws ExperimentError (a colour that is not hex, an
// unreadable checkpoint, a zip that cannot be written: the previous file then survives).
void saveExperiment(const QString& path, const std::vector<ExperimentRun>& runs);

// Reads and checks everything before returning anything: not a zip, a corrupted entry, a
// missing manifest or run entry, another format or version, a malformed metrics line, a config
// that does not validate. Loaded runs take the manifest's name; checkpointPath stays empty (the
// checkpoint is in checkpointZip). Throws ExperimentError.
std::vector<ExperimentRun> loadExperiment(const QString& path);

// What File > Open accepts: an experiment file, a run bundle (run_bundle.h) or a folder of CLI
// output (one run, or a preset's variants in sub-folders; their colours are left "" and their
// checkpoints stay on disk, in record.checkpointPath). Throws ExperimentError for everything.
std::vector<ExperimentRun> openAnything(const QString& path);

// "<index>-<name with anything but letters, digits, '.', '_' and '-' as '_'>", at most 48
// characters: a folder name that is the same on every OS and unique by its index.
QString safeRunFolderName(int index, const QString& name);

// The checkpoint a saved run carries: `given` if any, else the file at r.checkpointPath (if set).
// Throws ExperimentError when that file cannot be read.
QByteArray checkpointToEmbed(const QByteArray& given, const RunRecord& r);

}  // namespace amp
