// ampstudio-cli run: train from a config file and/or a preset, writing an output folder.
#include <QDir>
#include <QJsonDocument>
#include <QSaveFile>
#include <cstdio>

#include "app/cli_experiment.h"
#include "app/cli_report.h"
#include "engine/io/checkpoint.h"
#include "engine/io/run_output.h"
#include "engine/train/memory_estimate.h"

namespace amp::cli {

namespace {

void printRunHelp() {
  std::printf(
      "usage: ampstudio-cli run [CONFIG.json] [--preset NAME] [--set key=value]... [--out DIR]\n"
      "                         [--inject-nonfinite 2,7] [--trace] [--quiet]\n"
      "       ampstudio-cli run --resume CKPT.zip [--set key=value]... [--out DIR]\n"
      "Writes DIR/config.json, metrics.jsonl (one object per step), histograms.jsonl,\n"
      "events.log and summary.json (a preset with variants: one sub-folder per variant and a\n"
      "comparison in DIR/summary.json). Default DIR: ampstudio-run.\n"
      "checkpoint.every=N writes DIR/checkpoints/step-<N>.zip every N steps, checkpoint.at_end=true\n"
      "one at the end. --resume continues such a checkpoint exactly, with its config (--set may\n"
      "change e.g. train.steps, not the model, data, seed or precision), appending to\n"
      "DIR/metrics.jsonl. Default DIR: the run folder the checkpoint lies in.\n"
      "presets: %s\nkeys:\n", presetNames().c_str());
  for (const auto& k : configKeys())
    std::printf("  %-26s %-8s %s\n", k.key.c_str(), k.type.c_str(), k.help.c_str());
  std::printf("  %-26s %-8s %s\n", "autocast.<op>", "choice",
              "override an op's autocast list: lower_precision | fp32 | fp32_output | promote | pass_through");
}

}  // namespace

int cmdRun(const Args& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      printRunHelp();
      return 0;
    }
  std::vector<NamedConfig> configs;
  ExperimentArgs ea;
  try {
    ea = parseExperimentArgs(args);
    if (ea.resume.empty()) configs = buildConfigs(ea);
    else configs = {{"", buildResumeConfig(ea)}};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampstudio-cli run: %s\n", e.what());
    return 2;
  }
  const std::string out = !ea.outDir.empty() ? ea.outDir
                          : ea.resume.empty() ? "ampstudio-run"
                                              : defaultResumeOutDir(ea.resume);
  std::vector<LabelledResult> results;
  bool diverged = false;
  for (const auto& nc : configs) {
    const std::string dir = nc.label.empty() ? out : out + "/" + nc.label;
    try {
      RunResult r = runToEnd(nc.config, dir, ea.quiet, ea.trace, nc.label, ea.resume);
      diverged |= r.summary.status == "diverged" && nc.config.train.onDivergence == "stop";
      results.push_back({nc.label.empty() ? std::string(precisionModeName(nc.config.mode)) : nc.label,
                         std::move(r)});
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "ampstudio-cli run: %s\n", e.what());
      return 2;
    } catch (const DataError& e) {
      std::fprintf(stderr, "ampstudio-cli run: %s\n", e.what());
      return 2;
    } catch (const UsageError& e) {
      std::fprintf(stderr, "ampstudio-cli run: %s\n", e.what());
      return 2;
    } catch (const CheckpointError& e) {
      std::fprintf(stderr, "ampstudio-cli run: %s\n", e.what());
      return 2;
    } catch (const std::bad_alloc&) {
      // The Trainer refuses what its estimate says cannot fit; this is memory that ran out
      // anyway (taken by others meanwhile, or outside the estimate): never a bare "std::bad_alloc".
      std::fprintf(stderr, "ampstudio-cli run: out of memory running %s (batch %lld); try a smaller model or batch\n",
                   modelSettingsText(nc.config.model).c_str(), static_cast<long long>(nc.config.train.batchSize));
      return 2;
    }
  }
  if (configs.size() > 1) {
    QJsonObject cmp = comparisonToJson(results);
    cmp["preset"] = QString::fromStdString(ea.preset);
    QSaveFile f(QString::fromStdString(out + "/summary.json"));
    if (f.open(QIODevice::WriteOnly)) {
      f.write(QJsonDocument(cmp).toJson());
      f.commit();
    }
  }
  if (!ea.quiet || configs.size() > 1) printComparison(results, stdout);
  std::printf("outputs in %s\n", out.c_str());
  return diverged ? 1 : 0;
}

}  // namespace amp::cli
