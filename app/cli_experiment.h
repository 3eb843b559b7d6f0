// What run, compare and bench share: turning arguments into configs, and running one config to
// the end with a progress line and an output folder.
#pragma once

#include <QJsonObject>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/cli_main.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/train/run_summary.h"
#include "engine/train/trainer.h"

namespace amp {
class StepTurns;
}

namespace amp::cli {

// Thrown for bad command-line input: printed as one line, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExperimentArgs {
  std::string configFile;
  std::string preset;
  std::vector<std::string> overrides;  // key=value, in order
  std::string outDir;
  std::string resume;                  // checkpoint to resume from
  bool quiet = false;
  bool trace = false;
  bool overwrite = false;              // --overwrite: replace a run already in --out
  std::vector<std::string> rest;       // options the caller handles itself
};

// Parses the shared options; unknown "--x" options go to `rest` only if listed in `extra`
// (as "--name" for flags, "--name=" for options with a value); otherwise UsageError.
ExperimentArgs parseExperimentArgs(const Args& args, const std::vector<std::string>& extra = {});

struct NamedConfig {
  std::string label;  // variant label ("" for a single run)
  RunConfig config;
};
// Preset (with its variants) -> config file -> --set overrides. Throws ConfigError/UsageError
// (also for --resume, which only buildResumeConfig handles).
std::vector<NamedConfig> buildConfigs(const ExperimentArgs& a);

// --resume CKPT: the checkpoint's config with the --set overrides on top. A preset or config file
// is refused (the checkpoint defines the run), and so is a change of the model, data, seed or
// precision. Throws UsageError, ConfigError or CheckpointError (one line naming file and entry).
RunConfig buildResumeConfig(const ExperimentArgs& a);
// Where a resumed run writes without --out: the run folder holding the checkpoint
// (DIR/checkpoints/step-N.zip -> DIR), else "ampstudio-run".
std::string defaultResumeOutDir(const std::string& checkpoint);

struct RunResult {
  RunSummary summary;
  QJsonObject extra;  // backend, model, parameter count, ...
  std::vector<OpTraceEntry> trace;
  std::vector<double> stepMs;  // each step's time, as this process trained them
  int turnBlockSteps = 0;      // trained in turns of this many steps with the other variants (0: not)
};

// Runs `config` to the end. outDir "" = no files (and no checkpoints). Progress on stderr unless
// quiet. checkpoint.every / checkpoint.at_end write outDir/checkpoints/step-<N>.zip. resumeFrom:
// a checkpoint whose state is loaded first (config must come from buildResumeConfig); the
// folder's metrics then continue from the checkpoint's step. measureFiles: the summary gets the
// sizes of the run's checkpoint and of its weights in the compute dtype (model_files.h).
// replaceEarlier (--overwrite): an earlier run's files in outDir are removed once this run has
// started (its trainer built: data read, model fitted, backend made), never before.
// turns: the variants compared for speed train in turns (engine/train/speed_turns.h), this one as
// `turnIndex`; it leaves the rotation when it ends, however it ends.
RunResult runToEnd(const RunConfig& config, const std::string& outDir, bool quiet, bool trace,
                   const std::string& label, const std::string& resumeFrom = "",
                   bool measureFiles = false, bool replaceEarlier = false, StepTurns* turns = nullptr,
                   int turnIndex = 0);

QJsonObject traceToJson(const std::vector<OpTraceEntry>& trace);

}  // namespace amp::cli
