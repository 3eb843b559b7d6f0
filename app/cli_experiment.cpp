#include "app/cli_experiment.h"

#include <unistd.h>

#include <QJsonArray>
#include <chrono>
#include <cstdio>

#include "engine/io/config_json.h"
#include "engine/io/run_output.h"
#include "engine/train/event_text.h"

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
    else if (isExtra(s)) a.rest.push_back(s);
    else if (isExtra(s + "=")) {
      a.rest.push_back(s);
      a.rest.push_back(value(i, s));
    } else if (s.rfind("--", 0) == 0) throw UsageError("unknown option " + s);
    else if (a.configFile.empty()) a.configFile = s;
    else throw UsageError("unexpected argument '" + s + "' (one config file at most)");
  }
  return a;
}

std::vector<NamedConfig> buildConfigs(const ExperimentArgs& a) {
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
  if (preset && !preset->variants.empty()) {
    for (const auto& v : preset->variants) finish(presetConfig(*preset, &v), v.label);
  } else {
    finish(preset ? presetConfig(*preset) : RunConfig{}, "");
  }
  return out;
}

std::string formatBytes(std::int64_t b) {
  char buf[32];
  if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
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

RunResult runToEnd(const RunConfig& config, const std::string& outDir, bool quiet, bool trace,
                   const std::string& label, const std::string& resumeFrom) {
  Trainer trainer(config);
  if (!resumeFrom.empty()) throw UsageError("--resume: checkpoints are not supported by this build yet");
  std::unique_ptr<RunOutputWriter> writer;
  if (!outDir.empty()) writer = std::make_unique<RunOutputWriter>(QString::fromStdString(outDir), config);
  if (trace) trainer.requestTrace();

  RunResult result;
  QJsonArray model;
  for (const auto& line : trainer.modelSummary()) model.append(QString::fromStdString(line));
  result.extra["name"] = QString::fromStdString(config.displayName());
  result.extra["mode"] = QString::fromUtf8(precisionModeName(config.mode).data());
  result.extra["backend"] = QString::fromStdString(trainer.backend().description());
  result.extra["model"] = model;
  result.extra["parameters"] = static_cast<double>(trainer.model().parameterCount());
  result.extra["seed"] = static_cast<double>(config.seed);
  result.extra["total_steps"] = static_cast<double>(trainer.totalSteps());

  const bool tty = isatty(STDERR_FILENO);
  const std::string tag = label.empty() ? std::string(precisionModeName(config.mode)) : label;
  if (!quiet) {
    std::fprintf(stderr, "[%s] %s, %lld parameters, %lld steps — %s\n", tag.c_str(),
                 config.displayName().c_str(), static_cast<long long>(trainer.model().parameterCount()),
                 static_cast<long long>(trainer.totalSteps()), trainer.backend().description().c_str());
  }
  RunSummaryBuilder builder;
  const auto start = std::chrono::steady_clock::now();
  std::int64_t lastPrinted = -1;
  while (!trainer.finished()) {
    const StepMetrics m = trainer.step();
    builder.add(m);
    const auto events = describeEvents(m, config.scaler.growthInterval);
    if (writer) writer->writeStep(m, events);
    if (!quiet) {
      for (const auto& e : events) std::fprintf(stderr, "%s[%s] %s\n", tty ? "\r\033[K" : "", tag.c_str(), e.c_str());
      const std::int64_t total = trainer.totalSteps();
      const std::int64_t pct = m.step * 100 / total;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = elapsed / double(m.step) * double(total - m.step);
      const bool print = tty || pct / 10 != lastPrinted / 10 || m.step == total;
      if (print) {
        std::string acc = m.testAcc ? " test_acc " + std::to_string(*m.testAcc).substr(0, 6) : "";
        std::fprintf(stderr, "%s[%s] step %lld/%lld (%lld%%) loss %.5g scale %s skipped %lld | %.2f ms/step | ETA %.0fs%s%s",
                     tty ? "\r\033[K" : "", tag.c_str(), static_cast<long long>(m.step),
                     static_cast<long long>(total), static_cast<long long>(pct), m.loss,
                     formatScale(m.scaleAfter).c_str(), static_cast<long long>(builder.summary().skippedSteps),
                     m.stepMs, eta, acc.c_str(), tty ? "" : "\n");
        lastPrinted = pct;
      }
    }
  }
  if (!quiet && tty) std::fputc('\n', stderr);
  result.summary = builder.summary();
  if (result.summary.status == "running") result.summary.status = "finished";
  if (trace) result.trace = trainer.lastTrace();
  if (writer) {
    writer->writeSummary(result.summary, result.extra);
    if (trace) writer->writeJson("trace.json", traceToJson(result.trace));
  }
  return result;
}

}  // namespace amp::cli
