// ampstudio-cli run: train from a config file and/or a preset, writing an output folder.
#include <QDir>
#include <algorithm>
#include <QJsonDocument>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "app/cli_experiment.h"
#include "app/cli_output_folder.h"
#include "app/cli_ranks.h"
#include "app/cli_report.h"
#include "engine/config/presets.h"
#include "engine/dist/rank_keys.h"
#include "engine/io/checkpoint.h"
#include "engine/io/run_output.h"
#include "engine/io/run_record.h"
#include "engine/train/run_summary.h"
#include "engine/train/memory_estimate.h"
#include "engine/train/speed_turns.h"
#include "engine/train/trainer.h"

namespace amp::cli {

namespace {

void printRunHelp() {
  std::printf(
      "usage: ampstudio-cli run [CONFIG.json] [--preset NAME] [--set key=value]... [--out DIR]\n"
      "                         [--inject-nonfinite 2,7] [--trace] [--quiet] [--overwrite]\n"
      "                         [--ranks N]\n"
      "       ampstudio-cli run --resume CKPT.zip [--set key=value]... [--out DIR]\n"
      "Writes DIR/config.json, metrics.jsonl (one object per step), histograms.jsonl,\n"
      "events.log and summary.json (a preset with variants: one sub-folder per variant and a\n"
      "comparison in DIR/summary.json). Default DIR: ampstudio-run (or ampstudio-run-2, ... when\n"
      "that holds a run). A DIR that holds a run is refused unless --overwrite, which replaces\n"
      "that run's files (and its checkpoints/step-N.zip) and nothing else there.\n"
      "checkpoint.every=N writes DIR/checkpoints/step-<N>.zip every N steps, checkpoint.at_end=true\n"
      "one at the end. --resume continues such a checkpoint exactly, with its config (--set may\n"
      "change e.g. train.steps, not the model, data, seed or precision), appending to\n"
      "DIR/metrics.jsonl. Default DIR: the run folder the checkpoint lies in.\n"
      "--ranks N runs it data-parallel on N ranks through Open MPI's mpirun (the same as\n"
      "mpirun -np N ampstudio-cli run ...): each rank trains on its shard of every global batch\n"
      "(train.batch_size), gradients are averaged before the scaler; rank 0 writes DIR, and\n"
      "config.json records dist.ranks=N. The input is checked once before mpirun starts.\n"
      "Exit codes: 0 done, 1 diverged (train.on_divergence=stop), 2 bad input or output,\n"
      "3 a rank of a data-parallel run was lost (one line names it).\n"
      "presets: %s\nkeys:\n", presetNames().c_str());
  for (const auto& k : configKeys())
    std::printf("  %-26s %-8s %s\n", k.key.c_str(), k.type.c_str(), k.help.c_str());
  std::printf("  %-26s %-8s %s\n", "autocast.<op>", "choice",
              "override an op's autocast list: lower_precision | fp32 | fp32_output | promote | pass_through");
}

// Whether two paths name one folder (a resume's --out and the checkpoint's own run folder).
// Folders this run made for its outputs: a run refused before it wrote anything leaves none of
// them behind (an empty ampstudio-run-7 after a typo). Only empty ones go, deepest first.
class MadeFolders {
 public:
  void note(const std::string& dir) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(dir, ec);
    std::vector<std::string> fresh;
    for (; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) fresh.push_back(p.string());
    m_dirs.insert(m_dirs.end(), fresh.begin(), fresh.end());
  }
  void removeEmpty() {
    std::error_code ec;
    std::sort(m_dirs.begin(), m_dirs.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const auto& d : m_dirs)
      if (std::filesystem::is_directory(d, ec) && std::filesystem::is_empty(d, ec)) std::filesystem::remove(d, ec);
  }

 private:
  std::vector<std::string> m_dirs;
};

// Standard error captured while the input is checked (into a temporary file), then shown as it
// was and kept as lines.
class NotesSeen {
 public:
  explicit NotesSeen(bool capture) {
    if (!capture) return;
    std::fflush(stderr);
    m_file = std::tmpfile();
    m_saved = m_file ? ::dup(2) : -1;
    if (m_saved < 0 || ::dup2(::fileno(m_file), 2) < 0) release();
  }
  ~NotesSeen() { finish(); }
  void finish() {
    if (m_saved < 0) return;
    std::fflush(stderr);
    ::dup2(m_saved, 2);
    ::close(m_saved);
    m_saved = -1;
    std::rewind(m_file);
    char* buf = nullptr;
    std::size_t cap = 0;
    for (ssize_t n; (n = ::getline(&buf, &cap, m_file)) >= 0;) {
      std::fwrite(buf, 1, std::size_t(n), stderr);
      std::string line(buf, std::size_t(n));
      if (!line.empty() && line.back() == '\n') line.pop_back();
      m_lines.push_back(line);
    }
    std::free(buf);
    std::fflush(stderr);
    release();
  }
  const std::vector<std::string>& lines() const { return m_lines; }

 private:
  void release() {
    if (m_saved >= 0) ::close(m_saved);
    m_saved = -1;
    if (m_file) std::fclose(m_file);
    m_file = nullptr;
  }
  std::FILE* m_file = nullptr;
  int m_saved = -1;
  std::vector<std::string> m_lines;
};

bool sameFolder(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

// A variant trained on its own ranks (runVariantOnRanks), read back from the folder rank 0 wrote.
RunResult resultOfRanks(const RunConfig& config, const std::string& dir, bool quiet) {
  runVariantOnRanks(config, dir, quiet);
  const RunRecord rec = loadRunFolder(QString::fromStdString(dir));
  RunSummaryBuilder builder;
  for (const StepMetrics& m : rec.steps) builder.add(m);
  RunResult r;
  r.summary = builder.summary();
  r.summary.status = rec.status.isEmpty() ? "finished" : rec.status.toStdString();
  r.extra = rec.summary;
  return r;
}

}  // namespace

int cmdRun(const Args& allArgs) {
  for (const auto& a : allArgs)
    if (a == "--help" || a == "-h") {
      printRunHelp();
      return 0;
    }
  // --ranks N: the same command again, as N ranks under mpirun, once its input is checked here.
  Args args;
  int ranks = 1;
  bool ranksGiven = false;
  for (std::size_t i = 0; i < allArgs.size(); ++i) {
    if (allArgs[i] != "--ranks") {
      args.push_back(allArgs[i]);
      continue;
    }
    const std::string v = i + 1 < allArgs.size() ? allArgs[++i] : "";
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 1 || n > 1024) {
      printError("run", "--ranks: expected a number of ranks from 1 to 1024, got '" + v + "'");
      return 2;
    }
    ranks = int(n);
    ranksGiven = true;
  }
  if (ranksGiven && launchedRanks() > 1) {
    if (launchedRank() == 0)
      printError("run", "--ranks: already one of " + std::to_string(launchedRanks()) +
                            " ranks started by mpirun; give one or the other");
    return 2;
  }
  // Under mpirun only rank 0 writes: the others train the same steps with no folder and no
  // output, and end with the same exit code.
  const bool writer = launchedRank() == 0;
  std::vector<NamedConfig> configs;
  ExperimentArgs ea;
  // What this process says while it checks the input (a note on the preset, a CPU-sized lesson)
  // is shown now and remembered: ranks started from here read the same input and say it again,
  // which is then not shown twice.
  NotesSeen notes(launchedRanks() == 1);
  try {
    ea = parseExperimentArgs(args);
    if (!writer) {
      ea.quiet = true;
      ea.trace = false;
    }
    if (ea.resume.empty()) configs = buildConfigs(ea);
    else configs = {{"", buildResumeConfig(ea)}};
    // The run's real number of ranks is what it records (config.json, the app's "xN ranks"):
    // --ranks N, or the ranks mpirun started; and every rank a rank key names must be one of them.
    // A preset whose variants choose their own ranks (two-workers: 1 rank beside 2) is not
    // run on N ranks each: its "1_rank" would not be one.
    if (ranksGiven && configs.size() > 1)
      if (const Preset* p = findPreset(ea.preset))
        for (const auto& v : p->variants)
          for (const auto& kv : v.overrides)
            if (kv.first == "dist.ranks")
              throw UsageError("--ranks: the " + p->name +
                               " preset's variants choose their own ranks (dist.ranks); run it without --ranks");
    for (auto& nc : configs) {
      if (launchedRanks() > 1) nc.config.dist.ranks = launchedRanks();
      else if (ranksGiven) nc.config.dist.ranks = ranks;
      if (auto e = rankKeysError(nc.config)) throw ConfigError(*e);
    }
  } catch (const std::exception& e) {
    notes.finish();
    // Every rank reads the same input and fails alike: rank 0 says it, once.
    if (writer) printError("run", e.what());
    return 2;
  }
  notes.finish();
  // The input holds: the same command again under mpirun, its ranks taking dist.ranks from it.
  if (ranks > 1) return relaunchUnderMpirun(ranks, args, notes.lines());
  // One run with dist.ranks > 1: the whole command again under mpirun (as --ranks N does), before
  // any folder is claimed (rank 0 of the new ranks claims it).
  if (launchedRanks() == 1 && configs.size() == 1 && configs[0].config.dist.ranks > 1)
    return relaunchUnderMpirun(configs[0].config.dist.ranks, args, notes.lines());
  // The default folder never replaces an earlier run: ampstudio-run, then ampstudio-run-2, ...
  std::string out = !ea.outDir.empty()  ? ea.outDir
                    : !ea.resume.empty() ? defaultResumeOutDir(ea.resume)
                                         : freshOutputFolder("ampstudio-run");
  const bool defaultFolder = ea.outDir.empty() && ea.resume.empty();
  auto dirOf = [&](const NamedConfig& nc) { return nc.label.empty() ? out : out + "/" + nc.label; };
  // Every folder is checked before the first step: a run must not fail at its end for a
  // folder named summary.json, nor write over another run's metrics.
  MadeFolders made;
  std::unique_ptr<FolderClaim> claim;  // this process's hold on `out` until it returns
  auto giveUp = [&] {
    claim.reset();
    made.removeEmpty();
    return 2;
  };
  if (!writer) {
    bool diverged = false;
    for (const auto& nc : configs) {
      try {
        RunResult r = runToEnd(nc.config, "", true, false, nc.label, ea.resume, false, false);
        diverged |= r.summary.status == "diverged" && nc.config.train.onDivergence == "stop";
      } catch (const std::exception& e) {
        printError("run", "rank " + std::to_string(launchedRank()) + ": " + e.what());
        return 2;
      }
    }
    return diverged ? 1 : 0;
  }
  try {
    // Claimed first, so that a second run started at once with the same folder is refused
    // (or, for the default folder, takes the next free name) instead of writing beside this one.
    for (int attempt = 0;; ++attempt) {
      made.note(out);
      try {
        claim = std::make_unique<FolderClaim>(out);
        break;
      } catch (const UsageError&) {
        if (!defaultFolder || attempt > 100) throw;
        out = freshOutputFolder("ampstudio-run");
      }
    }
    for (const auto& nc : configs) made.note(dirOf(nc));
    if (configs.size() > 1) prepareOutputFolder({out, false, ea.overwrite, false});
    for (const auto& nc : configs) {
      OutputFolderPlan plan;
      plan.dir = dirOf(nc);
      plan.checkpoints = nc.config.checkpoint.every > 0 || nc.config.checkpoint.atEnd;
      plan.overwrite = ea.overwrite;
      // A resume continues its own run's folder (its metrics up to the checkpoint are kept).
      plan.continuing = !ea.resume.empty() && sameFolder(plan.dir, defaultResumeOutDir(ea.resume));
      prepareOutputFolder(plan);
    }
  } catch (const std::exception& e) {  // OutputError, UsageError
    printError("run", e.what());
    return giveUp();
  }
  // A preset's variants replace an earlier run's variant by variant; so that none of them is
  // replaced for a later variant's input to be refused, every variant's trainer is built once
  // before (data read, model fitted) when there is an earlier run to lose.
  if (ea.overwrite && configs.size() > 1) {
    try {
      for (const auto& nc : configs)
        if (!existingRunOutputs(dirOf(nc)).empty()) {
          for (const auto& each : configs) Trainer check(each.config);
          break;
        }
    } catch (const std::exception& e) {
      printError("run", e.what());
      return giveUp();
    }
  }
  std::vector<LabelledResult> results;
  bool diverged = false;
  // A preset's variants compare their speed (the table's "speed" column): they train in turns, a
  // block of steps each, on a thread apiece (engine/train/speed_turns.h), so that a change of
  // load falls on all of them alike instead of on whichever trained at the time. Not variants
  // on ranks of their own (mpirun's processes) nor the ranks of a run under mpirun.
  const bool inTurns = configs.size() > 1 && launchedRanks() == 1 &&
                       std::none_of(configs.begin(), configs.end(),
                                    [](const NamedConfig& nc) { return nc.config.dist.ranks > 1; });
  std::vector<RunResult> trained(configs.size());
  std::vector<std::exception_ptr> failures(configs.size());
  if (inTurns) {
    std::int64_t steps = 0;
    for (const auto& nc : configs) steps = std::max(steps, nc.config.train.steps);
    StepTurns turns(int(configs.size()), steps > 0 ? StepTurns::blockStepsFor(steps) : 25);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < configs.size(); ++i)
      threads.emplace_back([&, i] {
        const NamedConfig& nc = configs[i];
        try {
          trained[i] = runToEnd(nc.config, dirOf(nc), ea.quiet, ea.trace, nc.label, ea.resume,
                                nc.config.checkpoint.atEnd, ea.overwrite, &turns, int(i));
        } catch (...) {
          failures[i] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
  }
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const NamedConfig& nc = configs[i];
    try {
      // A run that ends with a checkpoint has its sizes measured for free: the file is there.
      // A variant on several ranks (dist.ranks) runs as mpirun's child processes into its folder.
      if (failures[i]) std::rethrow_exception(failures[i]);
      RunResult r = inTurns ? std::move(trained[i])
                    : nc.config.dist.ranks > 1 && launchedRanks() == 1
                        ? resultOfRanks(nc.config, dirOf(nc), ea.quiet)
                        : runToEnd(nc.config, dirOf(nc), ea.quiet, ea.trace, nc.label, ea.resume,
                                   nc.config.checkpoint.atEnd, ea.overwrite);
      diverged |= r.summary.status == "diverged" && nc.config.train.onDivergence == "stop";
      results.push_back({nc.label.empty() ? std::string(precisionModeName(nc.config.mode)) : nc.label,
                         std::move(r)});
    } catch (const std::bad_alloc&) {
      // The Trainer names the model, batch and estimate itself when its own memory runs out
      // (starting or stepping); memory that ran out anywhere else (reading the data, writing
      // outputs) is not the model's doing, so this says where, not what to shrink, and never a
      // bare "std::bad_alloc".
      printError("run", "out of memory preparing or recording the run in " + dirOf(nc) +
                            " (reading its data or writing its outputs); free memory and try again");
      return giveUp();
    } catch (const std::exception& e) {
      // Bad input (ConfigError, DataError, CheckpointError, UsageError) or output that could not
      // be written (OutputError): one line naming it, exit 2. What was written stays.
      printError("run", e.what());
      return giveUp();
    }
  }
  if (configs.size() > 1) {
    QJsonObject cmp = comparisonToJson(results);
    cmp["preset"] = QString::fromStdString(ea.preset);
    if (!writeOutputFile("run", out + "/summary.json", QJsonDocument(cmp).toJson().toStdString())) return 2;
  }
  if (!ea.quiet || configs.size() > 1) printComparison(results, stdout);
  if (!std::getenv("AMPSTUDIO_RANKS_CHILD")) std::printf("outputs in %s\n", out.c_str());
  return diverged ? 1 : 0;
}

}  // namespace amp::cli
