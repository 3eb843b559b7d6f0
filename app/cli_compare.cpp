// ampstudio-cli compare: fp32, AMP fp16 and AMP bf16 of one experiment with one seed, as one
// table (test accuracy, time per epoch, peak memory by category, checkpoint and 16-bit weight
// file sizes, skipped steps, ratios against fp32).
#include <QJsonDocument>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include "app/cli_experiment.h"
#include "app/cli_output_folder.h"
#include "app/cli_ranks.h"
#include "app/cli_report.h"
#include "engine/train/speed_turns.h"

namespace amp::cli {

int cmdCompare(const Args& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: ampstudio-cli compare [CONFIG.json] [--preset NAME] [--set key=value]...\n"
          "                             [--modes fp32,fp16,bf16] [--out DIR] [--json FILE] [--quiet]\n"
          "                             [--overwrite]\n"
          "Runs the experiment once per precision mode with the same seed and prints one table.\n"
          "The modes train in turns, a block of steps each, and their speed against fp32 is also\n"
          "given round by round (\"too noisy to conclude\" when the rounds disagree).\n"
          "With --out DIR each mode writes DIR/MODE; a DIR/MODE that holds a run is refused unless\n"
          "--overwrite, which replaces that run's files.\n");
      return 0;
    }
  std::vector<NamedConfig> configs;
  ExperimentArgs ea;
  std::vector<std::string> modes{"fp32", "fp16", "bf16"};
  std::string jsonPath;
  try {
    ea = parseExperimentArgs(args, {"--modes=", "--json="});
    for (std::size_t i = 0; i + 1 < ea.rest.size(); i += 2) {
      if (ea.rest[i] == "--json") jsonPath = ea.rest[i + 1];
      if (ea.rest[i] == "--modes") {
        modes.clear();
        std::string m;
        for (char ch : ea.rest[i + 1] + ",") {
          if (ch != ',') m += ch;
          else if (!m.empty()) {
            if (!parsePrecisionMode(m)) throw UsageError("--modes: unknown mode '" + m + "'");
            if (std::find(modes.begin(), modes.end(), m) != modes.end())
              throw UsageError("--modes: " + m + " given twice");
            modes.push_back(m);
            m.clear();
          }
        }
      }
    }
    if (modes.empty()) throw UsageError("--modes: no mode given (expected a list of fp32, fp16, bf16, pure_fp16)");
    configs = buildConfigs(ea);
    if (!jsonPath.empty()) checkOutputFile(jsonPath);  // before the work, not after it
    if (configs.size() != 1) throw UsageError("compare needs a single-run preset or config");
    // Each mode's folder is claimed before the first run, as `run` claims its --out: an earlier
    // comparison there is refused unless --overwrite (then replaced, and nothing else).
    if (!ea.outDir.empty()) {
      const RunConfig& c = configs.front().config;
      for (const auto& mode : modes)
        prepareOutputFolder({ea.outDir + "/" + mode, c.checkpoint.every > 0 || c.checkpoint.atEnd,
                             ea.overwrite, false});
    }
  } catch (const std::exception& e) {
    printError("compare", e.what());
    return 2;
  }
  // Held until the comparison is done: a second one started at once into the same --out is
  // refused instead of writing beside this one.
  std::unique_ptr<FolderClaim> claim;
  try {
    if (!ea.outDir.empty()) claim = std::make_unique<FolderClaim>(ea.outDir);
  } catch (const std::exception& e) {
    printError("compare", e.what());
    return 2;
  }
  // The modes train in turns, a thread each (engine/train/speed_turns.h), as `run`'s variants
  // do: a change of load falls on every mode alike, and the table's speed is paired round by
  // round below it. Not for a run on ranks (mpirun's processes: one mode at a time).
  const bool inTurns = modes.size() > 1 && launchedRanks() == 1 && configs.front().config.dist.ranks <= 1;
  std::int64_t steps = configs.front().config.train.steps;
  StepTurns turns(int(modes.size()), steps > 0 ? StepTurns::blockStepsFor(steps) : 25);
  std::vector<RunResult> trained(modes.size());
  std::vector<std::exception_ptr> failures(modes.size());
  auto runMode = [&](std::size_t i, StepTurns* t) {
    const std::string& mode = modes[i];
    RunConfig c = configs.front().config;
    setConfigValue(c, "amp.mode", mode);
    c.name = (ea.preset.empty() ? c.model.name : ea.preset) + " " + mode;
    const std::string dir = ea.outDir.empty() ? "" : ea.outDir + "/" + mode;
    return runToEnd(c, dir, ea.quiet, false, mode, "", /*measureFiles=*/true, ea.overwrite, t, int(i));
  };
  if (inTurns) {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < modes.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          trained[i] = runMode(i, &turns);
        } catch (...) {
          failures[i] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
  }
  std::vector<LabelledResult> results;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const std::string& mode = modes[i];
    try {
      if (failures[i]) std::rethrow_exception(failures[i]);
      results.push_back({mode, inTurns ? std::move(trained[i]) : runMode(i, nullptr)});
    } catch (const ConfigError& e) {
      printError("compare", e.what());
      return 2;
    } catch (const DataError& e) {
      printError("compare", e.what());
      return 2;
    }
  }
  printComparison(results, stdout);
  QJsonObject json = comparisonToJson(results);
  json["preset"] = QString::fromStdString(ea.preset);
  if (!jsonPath.empty() && !writeOutputFile("compare", jsonPath, QJsonDocument(json).toJson().toStdString()))
    return 2;
  return 0;
}

}  // namespace amp::cli
