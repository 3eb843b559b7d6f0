#include "app/cli_experiment.h"

#include <map>
#include "app/cli_output_folder.h"

#include "engine/io/model_files.h"
#include "app/cli_main.h"  // printError
#include "app/cli_ranks.h"

#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>

#include "engine/backend/backend_registry.h"
#include "engine/core/checked_file.h"
#include "engine/dist/data_parallel.h"
#include "engine/io/checkpoint.h"
#include "engine/io/config_json.h"
#include "engine/io/model_files.h"
#include "engine/io/run_record.h"
#include "engine/io/metrics_json.h"
#include "engine/io/run_output.h"
#include "engine/train/speed_turns.h"
#include "engine/train/event_text.h"
#include "engine/train/text_sample.h"
#include "engine/train/trainer.h"

namespace amp::cli {

ExperimentArgs parseExperimentArgs(const Args& args, const std::vector<std::string>& extra) {
  ExperimentArgs a;
  auto value = [&](std::size_t& i, const std::string& opt) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(opt + " needs a value");
    return args[++i];
  };
  auto isExtra = [&](const std::string& s) {
    for (const auto& e : extra)
      if (e == s) return true;
    return false;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == "--preset") a.preset = value(i, s);
    else if (s == "--set") a.overrides.push_back(value(i, s));
    else if (s == "--out") a.outDir = value(i, s);
    else if (s == "--resume") a.resume = value(i, s);
    else if (s == "--inject-nonfinite") a.overrides.push_back("train.inject_nonfinite=" + value(i, s));
    else if (s == "--quiet" || s == "-q") a.quiet = true;
    else if (s == "--trace") a.trace = true;
    else if (s == "--overwrite") a.overwrite = true;
    else if (isExtra(s)) a.rest.push_back(s);
    else if (isExtra(s + "=")) {
      a.rest.push_back(s);
      a.rest.push_back(value(i, s));
    } else if (s.rfind("--", 0) == 0) throw UsageError("unknown option " + shownValue(s));
    else if (a.configFile.empty()) a.configFile = s;
    else throw UsageError("unexpected argument " + shownValue(s) + " (one config file at most)");
  }
  return a;
}

std::vector<NamedConfig> buildConfigs(const ExperimentArgs& a) {
  if (!a.resume.empty()) throw UsageError("--resume works with 'ampstudio-cli run' only");
  std::vector<NamedConfig> out;
  const Preset* preset = nullptr;
  if (!a.preset.empty()) {
    preset = findPreset(a.preset);
    if (!preset)
      throw UsageError("--preset: unknown preset '" + a.preset + "' (expected one of " + presetNames() + ")");
  }
  auto finish = [&](RunConfig c, const std::string& label) {
    if (!a.configFile.empty()) applyConfigFile(c, a.configFile);
    for (const auto& kv : a.overrides) {
      try {
        applyOverride(c, kv);
      } catch (const ConfigError& e) {
        throw ConfigError(std::string("--set ") + e.what());
      }
    }
    if (auto e = validateRunConfig(c)) throw ConfigError(*e);
    out.push_back({label, std::move(c)});
  };
  // A GPU lesson without a usable GPU runs in its CPU-sized form, and says so (unless the user
  // chose a backend: then that choice stands, and backend=cuda is refused with the reason).
  bool cpuSized = false;
  if (preset && preset->needsGpu && !gpuInventory().usable()) {
    const bool backendChosen = std::any_of(a.overrides.begin(), a.overrides.end(), [](const std::string& kv) {
      return kv.rfind("backend=", 0) == 0;
    });
    if (!backendChosen) {
      cpuSized = true;
      std::fprintf(stderr, "ampstudio-cli: --preset %s is made for a GPU and none is usable (%s); running its CPU-sized form\n",
                   preset->name.c_str(), gpuInventory().unavailableReason.c_str());
    }
  }
  // A --set of a key the variants vary (amp.mode for the recipe's fp32/fp16/bf16) chooses that
  // value for the run: one run with it, not three runs that all silently take the same value.
  std::string fixedKey;
  if (preset)
    for (const auto& v : preset->variants)
      for (const auto& [key, value] : v.overrides)
        for (const std::string& kv : a.overrides)
          if (fixedKey.empty() && kv.rfind(key + "=", 0) == 0) fixedKey = key;
  if (preset && !preset->variants.empty() && !fixedKey.empty()) {
    std::fprintf(stderr, "ampstudio-cli: --set %s chooses what the %s preset's variants vary: one run\n",
                 fixedKey.c_str(), preset->name.c_str());
    finish(presetConfig(*preset, nullptr, cpuSized), "");
  } else if (preset && !preset->variants.empty()) {
    for (const auto& v : preset->variants) finish(presetConfig(*preset, &v, cpuSized), v.label);
  } else {
    finish(preset ? presetConfig(*preset, nullptr, cpuSized) : RunConfig{}, "");
  }
  return out;
}

RunConfig buildResumeConfig(const ExperimentArgs& a) {
  if (!a.preset.empty() || !a.configFile.empty())
    throw UsageError(std::string("--resume: the checkpoint holds the run's config; change it with --set, not ") +
                     (a.preset.empty() ? "a config file" : "--preset"));
  const CheckpointInfo info = readCheckpointInfo(QString::fromStdString(a.resume));
  RunConfig c = info.config;
  for (const auto& kv : a.overrides) {
    try {
      applyOverride(c, kv);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--set ") + e.what());
    }
  }
  if (auto e = resumeConfigError(info.config, c)) throw UsageError("--resume: --set " + *e);
  if (auto e = validateRunConfig(c)) throw ConfigError(*e);
  return c;
}

std::string defaultResumeOutDir(const std::string& checkpoint) {
  const QDir folder = QFileInfo(QString::fromStdString(checkpoint)).absoluteDir();
  if (folder.dirName() == "checkpoints") return QFileInfo(folder.absolutePath()).absolutePath().toStdString();
  return "ampstudio-run";
}

QJsonObject traceToJson(const std::vector<OpTraceEntry>& trace) {
  QJsonArray rows;
  for (const auto& e : trace) {
    QJsonObject r;
    r["phase"] = QString::fromUtf8(tracePhaseName(e.phase).data());
    r["layer"] = QString::fromStdString(e.layer);
    r["op"] = QString::fromStdString(e.op);
    r["policy"] = QString::fromUtf8(castPolicyName(e.policy).data());
    r["autocast"] = e.autocastEnabled;
    QJsonArray in;
    for (DType d : e.inputDtypes) in.append(QString::fromUtf8(dtypeName(d).data()));
    r["inputs"] = in;
    r["compute"] = QString::fromUtf8(dtypeName(e.computeDtype).data());
    r["output"] = QString::fromUtf8(dtypeName(e.outputDtype).data());
    r["casts"] = e.castsInserted;
    r["cache_hits"] = e.cacheHits;
    if (!e.note.empty()) r["note"] = QString::fromStdString(e.note);
    rows.append(r);
  }
  QJsonObject o;
  o["ops"] = rows;
  return o;
}

namespace {

// Drops the lines of steps after `step`: a run killed after its last checkpoint wrote them, and
// the resumed run is about to write those steps again. JSON lines ({"step": N, ...}) that do
// not parse are dropped too (a line cut short by the kill); events.log lines are "step N: ...".
void keepStepsUpTo(const QString& path, std::int64_t step, bool jsonLines) {
  if (!QFile::exists(path)) return;
  const QByteArray all = readFileBytes(path);
  QByteArray kept;
  for (const QByteArray& line : all.split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    bool keep;
    if (jsonLines) {
      const QJsonObject o = QJsonDocument::fromJson(line).object();
      keep = o.contains("step") && static_cast<std::int64_t>(o["step"].toDouble()) <= step;
    } else {
      bool numbered = false;
      const qint64 n = line.startsWith("step ") ? line.mid(5, line.indexOf(':') - 5).toLongLong(&numbered) : 0;
      keep = !numbered || n <= step;
    }
    if (keep) kept += line + '\n';
  }
  if (kept != all) writeFileAtomically(path, kept);
}

// The step of one metrics line, or -1 when it is not one (a line cut short).
std::int64_t stepOfLine(const QByteArray& line) {
  const QJsonObject o = QJsonDocument::fromJson(line).object();
  return o.contains("step") ? static_cast<std::int64_t>(o["step"].toDouble()) : -1;
}

// A checkpoint resumed into a folder that holds a run must be that run's: every metrics line the
// folder has up to the checkpoint's step must be the checkpoint's own line for that step (the
// checkpoint stores the run's metrics.jsonl up to its step). A checkpoint copied in from another
// run mixed the two runs' metrics and replaced the run's config.
void requireSameRun(const QString& dir, const QByteArray& history, std::int64_t step,
                    const std::string& checkpoint) {
  const QString metrics = dir + "/" + kRunMetricsFile;
  if (!QFile::exists(metrics)) return;
  std::map<std::int64_t, QByteArray> own;
  for (const QByteArray& line : history.split('\n'))
    if (!line.trimmed().isEmpty()) own[stepOfLine(line)] = line.trimmed();
  for (const QByteArray& line : readFileBytes(metrics).split('\n')) {
    const std::int64_t s = stepOfLine(line);
    if (s < 1 || s > step) continue;
    const auto it = own.find(s);
    if (it == own.end() || it->second != line.trimmed())
      throw UsageError("--resume: " + checkpoint + " is not the checkpoint of the run in " +
                       dir.toStdString() + " (their metrics differ at step " + std::to_string(s) +
                       "); resume it into another folder with --out");
  }
}

// A resumed run continues its folder: metrics.jsonl is the checkpoint's own up to its step
// (which also restores steps a cut or damaged file lost: summary.json then claims only what is
// there), then the new steps appended. A new folder starts the same way, with the events.
void prepareResumedFolder(const QString& dir, const QByteArray& history, const std::vector<StepMetrics>& steps,
                          std::int64_t step, int growthInterval) {
  makeFolders(dir.toStdString());
  // The folder's summary described the run before this resume; the resumed run writes its own
  // at the end. Removed first, so that whatever happens next (a kill, a full disk) no summary
  // claims steps the trimmed metrics no longer hold.
  if (QFileInfo(dir + "/" + kRunSummaryFile).isFile() && !QFile::remove(dir + "/" + kRunSummaryFile))
    throw OutputError((dir + "/" + kRunSummaryFile).toStdString() + ": cannot remove the previous summary");
  const QString metrics = dir + "/" + kRunMetricsFile;
  const bool fresh = !QFile::exists(metrics);
  writeFileAtomically(metrics, history);
  if (fresh) {
    QByteArray events;
    for (const StepMetrics& m : steps)
      for (const auto& e : describeEvents(m, growthInterval)) events += QByteArray::fromStdString(e) + '\n';
    if (!QFile::exists(dir + "/" + kRunEventsFile)) writeFileAtomically(dir + "/" + kRunEventsFile, events);
  }
  keepStepsUpTo(dir + "/" + kRunHistogramsFile, step, true);
  keepStepsUpTo(dir + "/" + kRunEventsFile, step, false);
}

// The end of a data-parallel run: whether the replicas are still identical (every rank's weights
// digest, gathered on rank 0), and the all-reduce's share of the step, for summary.json.
void describeRanks(Trainer& trainer, Communicator& comm, RunResult& result, const std::string& tag, bool quiet) {
  const std::uint64_t d = modelDigest(trainer.backend(), trainer.model());
  const double halves[2] = {double(d >> 32), double(d & 0xffffffffu)};  // exact in doubles
  const std::vector<double> all = comm.gatherToRoot(halves, "weights digest");
  if (comm.rank() != 0) return;
  bool identical = true;
  for (std::size_t i = 2; i < all.size(); i += 2) identical &= all[i] == all[0] && all[i + 1] == all[1];
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(d));
  result.extra["ranks_identical"] = identical;
  result.extra["weights_digest"] = QString::fromLatin1(digest);
  const double a = result.summary.medianAllreduceMs, s = result.summary.medianStepMs;
  result.extra["ranks"] = result.summary.ranks;
  result.extra["median_allreduce_ms"] = a;
  result.extra["allreduce_share"] = s > 0 ? a / s : 0.0;
  if (!quiet)
    std::fprintf(stderr, "[%s] %d ranks (%s): replicas %s at the end (weights digest %s); all-reduce %.3g ms of a %.3g ms step (%.0f%%)\n",
                 tag.c_str(), comm.size(), comm.description().c_str(), identical ? "identical" : "DIFFER",
                 digest, a, s, s > 0 ? 100 * a / s : 0.0);
  if (!identical)
    std::fprintf(stderr, "[%s] warning: the ranks' weights differ at the end of the run\n", tag.c_str());
}

}  // namespace

RunResult runToEnd(const RunConfig& config, const std::string& outDir, bool quiet, bool trace,
                   const std::string& label, const std::string& resumeFrom, bool measureFiles,
                   bool replaceEarlier, StepTurns* turns, int turnIndex) {
  // However this run ends (its input refused, a write failed, trained to its end), the variants
  // it takes turns with go on without it.
  struct LeaveTurns {
    StepTurns* turns;
    int index;
    ~LeaveTurns() {
      if (turns) turns->leave(index);
    }
  } leaveTurns{turns, turnIndex};
  Trainer trainer(config, rankBackend(config));  // a rank of several: its own GPU where there is one
  const bool resumed = !resumeFrom.empty();
  const bool checkpoints = !outDir.empty() && (config.checkpoint.every > 0 || config.checkpoint.atEnd);
  RunSummaryBuilder builder;
  QByteArray metricsSoFar;  // the whole run's metrics.jsonl, stored in every checkpoint
  std::vector<StepMetrics> history;  // the same, read back (resumed runs)
  if (resumed) {
    const QString ckpt = QString::fromStdString(resumeFrom);
    loadCheckpoint(trainer, ckpt);
    metricsSoFar = checkpointMetrics(ckpt);
    history = stepMetricsFromJsonLines(metricsSoFar);
    // The summary covers the whole run, not only the steps of this process.
    for (const StepMetrics& m : history) builder.add(m);
  }
  // A rank of a data-parallel run (mpirun): rank 0's weights (or the checkpoint all ranks
  // loaded) on every rank before the first step.
  Communicator& comm = processCommunicator(config.dist.timeoutS);
  if (comm.size() > 1) trainer.joinRanks(comm);
  const std::int64_t startStep = trainer.stepsDone();
  if (resumed && trainer.finished())
    throw UsageError("--resume: the checkpoint is at step " + std::to_string(startStep) +
                     " and the run ends at step " + std::to_string(trainer.totalSteps()) +
                     ": nothing to run (raise train.steps or train.epochs with --set)");
  if (resumed && !outDir.empty())
    requireSameRun(QString::fromStdString(outDir), metricsSoFar, startStep, resumeFrom);
  std::unique_ptr<RunOutputWriter> writer;
  // The new run has started (everything its input could refuse was refused above): only now
  // does an earlier run in the folder give way to it.
  if (replaceEarlier && !resumed && !outDir.empty()) replaceEarlierRun(outDir);
  if (!outDir.empty()) {
    const QString dir = QString::fromStdString(outDir);
    if (resumed) prepareResumedFolder(dir, metricsSoFar, history, startStep, config.scaler.growthInterval);
    writer = std::make_unique<RunOutputWriter>(dir, config, resumed);
  }
  const QString checkpointDir = QString::fromStdString(outDir) + "/checkpoints/";
  std::int64_t lastCheckpoint = resumed ? startStep : -1;
  if (trace) trainer.requestTrace();

  RunResult result;
  QJsonArray model;
  for (const auto& line : trainer.modelSummary()) model.append(QString::fromStdString(line));
  result.extra["name"] = QString::fromStdString(config.displayName());
  result.extra["mode"] = QString::fromUtf8(precisionModeName(config.mode).data());
  result.extra["backend"] = QString::fromStdString(trainer.backend().description());
  const std::string computePath = trainer.backend().computePath(config.computeDtype());
  result.extra["compute"] = QString::fromStdString(std::string(dtypeName(config.computeDtype())) +
                                                   " " + computePath);
  result.extra["model"] = model;
  result.extra["parameters"] = static_cast<double>(trainer.model().parameterCount());
  result.extra["seed"] = static_cast<double>(config.seed);
  result.extra["total_steps"] = static_cast<double>(trainer.totalSteps());

  if (comm.size() > 1) result.extra["distributed"] = QString::fromStdString(comm.description());
  const bool tty = isatty(STDERR_FILENO);
  const std::string tag = label.empty() ? std::string(precisionModeName(config.mode)) : label;
  if (!quiet) {
    std::fprintf(stderr, "[%s] %s, %lld parameters, %lld steps — %s\n", tag.c_str(),
                 config.displayName().c_str(), static_cast<long long>(trainer.model().parameterCount()),
                 static_cast<long long>(trainer.totalSteps()), trainer.backend().description().c_str());
    std::fprintf(stderr, "[%s] %s GEMMs and convolutions: %s\n", tag.c_str(),
                 std::string(dtypeName(config.computeDtype())).c_str(), computePath.c_str());
    if (Fp8Context* fp8 = trainer.fp8()) {
      const auto& q = fp8->quantizedLayers();
      std::fprintf(stderr, "[%s] %s: %zu Linear layer(s) quantised (%s%s), the rest in bf16 (fp8.keep_bf16=%s); "
                   "the formats emulated exactly, fp32 accumulation%s\n",
                   tag.c_str(), fp8->describe().c_str(), q.size(), q.front().c_str(),
                   q.size() > 1 ? (" ... " + q.back()).c_str() : "", config.fp8.keepBf16.c_str(),
                   fp8->accumulatorModel() ? " replaced by the accumulation MODEL" : "");
    }
  }
  if (Fp8Context* fp8 = trainer.fp8()) result.extra["fp8_recipe"] = QString::fromStdString(fp8->describe());
  if (!quiet && resumed)
    std::fprintf(stderr, "[%s] resumed from %s at step %lld\n", tag.c_str(), resumeFrom.c_str(),
                 static_cast<long long>(startStep));
  // A checkpoint that cannot be written is reported and the run goes on: the earlier ones are
  // intact, and stopping would lose the training done since them.
  auto checkpoint = [&] {
    if (lastCheckpoint == trainer.stepsDone()) return;
    lastCheckpoint = trainer.stepsDone();
    try {
      if (writer) writer->sync();  // the lines a checkpoint's step follows are on the disk first
      saveCheckpoint(trainer, checkpointDir + checkpointFileName(lastCheckpoint), metricsSoFar);
    } catch (const std::exception& e) {  // CheckpointError, OutputError (sync)
      std::fprintf(stderr, "%s[%s] warning: checkpoint not written: %s\n", tty ? "\r\033[K" : "", tag.c_str(),
                   e.what());
    }
  };
  if (turns) {
    turns->ready(turnIndex);  // no variant is timed while another is still being set up
    result.turnBlockSteps = turns->blockSteps();
  }
  const auto start = std::chrono::steady_clock::now();
  std::int64_t lastPrinted = -1;
  while (!trainer.finished()) {
    // dist.kill_rank: this rank exits before the step, as a rank that dies would (the others
    // then see mpirun end the job, or their collective time out).
    if (comm.size() > 1 && comm.rank() == config.dist.killRank && trainer.stepsDone() + 1 == config.dist.killStep) {
      std::fprintf(stderr, "rank %d: dist.kill_step: exiting at step %lld, as a rank that dies would\n", comm.rank(),
                   static_cast<long long>(trainer.stepsDone() + 1));
      std::fflush(stderr);
      std::_Exit(3);
    }
    if (turns) turns->waitTurn(turnIndex);
    const StepMetrics m = trainer.step();
    builder.add(m);
    result.stepMs.push_back(m.stepMs);
    const auto events = describeEvents(m, config.scaler.growthInterval);
    if (writer) {
      try {
        writer->writeStep(m, events);
      } catch (const OutputError& e) {
        // Training on without a record would be lost work; every whole line before stays.
        throw OutputError(std::string(e.what()) + "; the run stopped at step " + std::to_string(m.step) +
                          (m.step > 1 ? ", and " + outDir + " keeps its steps up to " + std::to_string(m.step - 1)
                                      : std::string()));
      }
    }
    // A measured checkpoint carries the metrics a written one would.
    if (checkpoints || measureFiles) metricsSoFar += stepMetricsJsonLine(m);
    if (checkpoints && config.checkpoint.every > 0 && m.step % config.checkpoint.every == 0) checkpoint();
    if (!quiet) {
      for (const auto& e : events) std::fprintf(stderr, "%s[%s] %s\n", tty ? "\r\033[K" : "", tag.c_str(), e.c_str());
      const std::int64_t total = trainer.totalSteps();
      const std::int64_t pct = m.step * 100 / total;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = elapsed / double(m.step - startStep) * double(total - m.step);
      const bool print = tty || pct / 10 != lastPrinted / 10 || m.step == total;
      if (print) {
        std::string acc = m.testAcc ? " test_acc " + std::to_string(*m.testAcc).substr(0, 6) : "";
        std::fprintf(stderr, "%s[%s] step %lld/%lld (%lld%%) loss %.5g scale %s skipped %lld | %.2f ms/step | ETA %.0fs%s%s",
                     tty ? "\r\033[K" : "", tag.c_str(), static_cast<long long>(m.step),
                     static_cast<long long>(total), static_cast<long long>(pct), m.loss,
                     formatScale(m.scaleAfter).c_str(), static_cast<long long>(builder.skippedSteps()),
                     m.stepMs, eta, acc.c_str(), tty ? "" : "\n");
        lastPrinted = pct;
      }
    }
    // The turn passes once this step is written and said: no other variant's timed step runs
    // beside the writing, and the progress lines come in the order the steps ran.
    if (turns) turns->stepDone(turnIndex);
  }
  if (turns) turns->leave(turnIndex);  // what follows (checkpoint, sample, file sizes) is not timed
  if (!quiet && tty) std::fputc('\n', stderr);
  // A CUDA graph that could not be recorded or replayed leaves eager steps (the same numbers,
  // slower): say so once, with the reason.
  if (!quiet && !trainer.stepGraphNote().empty())
    std::fprintf(stderr, "[%s] note: %s\n", tag.c_str(), trainer.stepGraphNote().c_str());
  if (checkpoints && config.checkpoint.atEnd) checkpoint();
  if (resumed) {
    result.extra["resumed_from"] = QString::fromStdString(resumeFrom);
    result.extra["resumed_at_step"] = static_cast<double>(startStep);
  }
  result.summary = builder.summary();
  if (result.summary.status == "running") result.summary.status = "finished";
  if (comm.size() > 1) describeRanks(trainer, comm, result, tag, quiet);
  // A language model shows what it learnt: 200 bytes after a newline, sampled with a fixed seed.
  if (config.model.name == "gpt" && !trainer.diverged()) {
    const std::string sample = sampleText(trainer);
    result.extra["sample"] = QString::fromUtf8(sample.data(), qsizetype(sample.size()));
    if (!quiet) std::fprintf(stderr, "[%s] sample: %s\n", tag.c_str(), printableSample(sample).c_str());
  }
  if (measureFiles) {
    // The checkpoint just written at the end when there is one, else a temporary one.
    const bool atEnd = checkpoints && lastCheckpoint == trainer.stepsDone();
    try {
      const ModelFileSizes f = measureModelFiles(
          trainer, atEnd ? checkpointDir + checkpointFileName(lastCheckpoint) : QString(), metricsSoFar);
      result.summary.checkpointBytes = f.checkpointBytes;
      result.summary.weightsBytes = f.weightsBytes;
      result.summary.weightsDtype = f.weightsDtype;
    } catch (const std::exception& e) {  // the run itself is done: its sizes stay unmeasured
      std::fprintf(stderr, "[%s] warning: model files not measured: %s\n", tag.c_str(), e.what());
    }
  }
  if (trace) result.trace = trainer.lastTrace();
  if (writer) {
    writer->writeSummary(result.summary, result.extra);
    if (trace) writer->writeJson("trace.json", traceToJson(result.trace));
  }
  return result;
}

}  // namespace amp::cli
