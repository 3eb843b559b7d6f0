// Where `ampstudio-cli run` writes, checked before any training: a run that cannot write its
// files should fail in its first second with exit 2, not after an hour (a folder named
// summary.json), and must never silently replace another run's metrics or leave that run's
// checkpoints beside its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/checked_file.h"

namespace amp::cli {

// The files and folders of ours that `dir` already holds ("metrics.jsonl", "checkpoints/"):
// a run's outputs, or a preset comparison's summary.json.
std::vector<std::string> existingRunOutputs(const std::string& dir);

struct OutputFolderPlan {
  std::string dir;
  bool checkpoints = false;   // the run writes dir/checkpoints/
  bool overwrite = false;     // --overwrite: an earlier run's files there may be replaced
  bool continuing = false;    // a resume into the run's own folder: its files are meant to stay
};

// Makes `plan.dir` and checks that every file a run writes there can be written: no folder
// where a file goes (summary.json, metrics.jsonl, ...), no file where checkpoints/ goes, the
// folder writable. A folder that already holds a run is refused (UsageError naming what it
// holds and --overwrite) unless `overwrite`. Nothing is removed here: the earlier run is
// replaced only once the new one has started (replaceEarlierRun), so a new run refused for its
// input (a bad CSV row, a model too big, no GPU) leaves the old one whole. Throws OutputError
// or UsageError, one line each.
void prepareOutputFolder(const OutputFolderPlan& plan);

// Removes an earlier run's outputs from `dir` (our file names only, and checkpoints/step-N.zip;
// nothing else in the folder is touched). Throws OutputError.
void replaceEarlierRun(const std::string& dir);

// `base` when nothing of a run is there yet, else the first free "base-2", "base-3", ...: the
// default output folder never replaces an earlier run.
std::string freshOutputFolder(const std::string& base);

// This process's hold on an output folder, so that two runs started at once with one --out do
// not both write there (each said "outputs in DIR" and one run's files were gone). A lock
// (flock) on DIR/.ampstudio.lock, which the system releases when the process ends however it
// ends, so a killed run leaves no stale claim. Released (and the file removed) on destruction.
class FolderClaim {
 public:
  // Makes DIR if needed and claims it; throws UsageError naming DIR when another process holds
  // it, OutputError when DIR cannot be made or written.
  explicit FolderClaim(const std::string& dir);
  ~FolderClaim();
  FolderClaim(const FolderClaim&) = delete;
  FolderClaim& operator=(const FolderClaim&) = delete;

 private:
  std::string m_lockPath;
  int m_fd = -1;
};

inline constexpr const char* kFolderLockName = ".ampstudio.lock";

// checkOutputFile (engine/core/checked_file.h) checks a single output file before the work.

// Refuses (OutputError) an output file that is one of the command's inputs: a file of one of the
// `inputs` (files, or folders searched two levels down, a run and its checkpoints/), compared by
// identity, not by name (`export --run R -o R/metrics.jsonl` replaced its own input).
void refuseOwnInput(const std::string& output, const std::vector<std::string>& inputs);

// writeFileAtomically, with a failure printed as "ampstudio-cli COMMAND: PATH: cannot write:
// REASON": returns false then (the caller exits 2).
bool writeOutputFile(const std::string& command, const std::string& path, std::string_view bytes);

}  // namespace amp::cli
