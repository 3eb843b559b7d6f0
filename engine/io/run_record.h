// A finished (or killed) run read back into memory: what the app needs to show a run it did not
// train itself, from a CLI output folder, an experiment file or a run bundle. The files are the
// ones RunOutputWriter writes (run_output.h); the zip formats store the same files as entries.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/config/run_config.h"
#include "engine/train/step_metrics.h"

namespace amp {

// One line naming the file (and the line of a JSON-lines file) and what is wrong.
class RunRecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The files of a run, in a folder or as zip entries.
inline constexpr const char* kRunConfigFile = "config.json";
inline constexpr const char* kRunMetricsFile = "metrics.jsonl";
inline constexpr const char* kRunHistogramsFile = "histograms.jsonl";
inline constexpr const char* kRunEventsFile = "events.log";
inline constexpr const char* kRunSummaryFile = "summary.json";
inline constexpr const char* kRunFiles[] = {kRunConfigFile, kRunMetricsFile, kRunHistogramsFile,
                                            kRunEventsFile, kRunSummaryFile};

struct RunRecord {
  RunConfig config;
  QString name;    // summary.json's "name", else the config's display name
  QString status;  // summary.json's status (running | finished | diverged | stopped | failed)
  // The user's bookkeeping, in summary.json as "group", "tags" and "note" (written only when set,
  // so a run without them has the summary it always had): runs started together share a group.
  QString group;
  QStringList tags;
  QString note;
  std::vector<StepMetrics> steps;  // in file order; their `histograms` stay empty (see below)
  std::vector<std::pair<std::int64_t, HistogramRecord>> histograms;  // (step, record), file order
  QStringList events;              // events.log, one sentence a line
  QJsonObject summary;             // summary.json as written ({} when the run left none)
  QString checkpointPath;          // a folder's latest checkpoints/step-N.zip, "" if none
  QStringList warnings;            // tolerated problems, e.g. a last line cut short by a kill
};

// A whole file's bytes (a regular file of at most kMaxRunFileBytes; RunRecordError otherwise),
// and a file replaced only once all its bytes are on the disk (OutputError otherwise). Both
// messages name the path and the system's reason.
inline constexpr std::int64_t kMaxRunFileBytes = std::int64_t{4} << 30;
QByteArray readFileBytes(const QString& path);
void writeFileAtomically(const QString& path, const QByteArray& bytes);

// Reads what histogramToJson() wrote. Counts are stored per bin; the fp16 range counts
// (underflow, ...) come back from the stored fractions times the total. Throws RunRecordError
// (without a file name: the caller adds "FILE:LINE: ").
HistogramRecord histogramFromJson(const QJsonObject& o);

// The run's files as bytes, keyed by file name (kRun*File). summary.json is the record's summary
// with "name" and "status" (and "group", "tags", "note" when set) from the record, so a renamed
// or re-tagged run keeps its name and tags.
std::map<QString, QByteArray> runRecordFiles(const RunRecord& r);

// Parses a run's files. config.json and metrics.jsonl are required; histograms.jsonl,
// events.log and summary.json may be missing (a run killed early). `where` prefixes every file
// name in messages ("DIR/", "x.ampx: runs/0-fp32/"). A malformed line is an error naming
// "<where>metrics.jsonl:<line>"; an unparsable last line without its newline is a run killed
// mid-write: dropped and noted in `warnings`. Throws RunRecordError.
RunRecord runRecordFromFiles(const std::map<QString, QByteArray>& files, const QString& where);

// Whether `dir` holds a run's output (its metrics.jsonl).
bool isRunFolder(const QString& dir);

// A CLI output folder (ampstudio-cli run --out DIR). Throws RunRecordError naming the file.
RunRecord loadRunFolder(const QString& dir);

// `dir` itself when it is a run folder, else its sub-folders that are (a preset with variants
// writes one per variant): in the order of the comparison's summary.json, then by name. Throws
// RunRecordError when there is no run at all, or for the first run that does not load.
std::vector<RunRecord> loadRunFolders(const QString& dir);

// Writes the record as a run folder (each file atomically; folders are created). A
// checkpointPath is copied to DIR/checkpoints/ under its own name. Throws RunRecordError.
void writeRunFolder(const RunRecord& r, const QString& dir);

}  // namespace amp
