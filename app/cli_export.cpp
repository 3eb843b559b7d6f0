// ampstudio-cli export: the metrics of one or more run folders as CSV or JSON, their charts, or
// an .ampx experiment for the app.
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include <QFileInfo>

#include "app/cli_experiment.h"
#include "app/cli_output_folder.h"
#include "engine/io/experiment_file.h"
#include "engine/io/metrics_export.h"
#include "engine/io/run_record.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/tensorboard_import.h"
#include "app/cli_export_charts.h"

namespace amp::cli {

namespace {

constexpr const char* kExportUsage =
    "usage: ampstudio-cli export --run DIR [--run DIR2 ...] --format csv|json|png|svg|pdf|ampx|tensorboard\n"
    "                            [--smoothing W] [--output FILE]\n"
    "       ampstudio-cli export (--run DIR | --checkpoint FILE.zip) --weights fp32|fp16|bf16\n"
    "                            --output FILE.safetensors\n"
    "  png|svg|pdf      the whole dashboard of charts for the runs (default FILE: dashboard.F)\n"
    "  ampx             an experiment file the app opens (File > Open, or from a file manager),\n"
    "                   with each run's latest checkpoint (--output FILE.ampx needed)\n"
    "  tensorboard      TensorBoard event files, one sub-folder per run, in --output DIR\n"
    "                   (tensorboard --logdir DIR): scalars, exponent histograms, the config\n"
    "  --run DIR        a run folder (ampstudio-cli run --out DIR), a folder whose sub-folders\n"
    "                   are runs (a preset with variants), a PyTorch probe's folder, or a\n"
    "                   TensorBoard log folder (imported); repeat to export several\n"
    "  --format F       csv: one row per run per step; json: per run its name, config, summary\n"
    "                   and one array per column\n"
    "  --smoothing W    weight of loss_smoothed, TensorBoard's debiased EMA, 0 <= W < 1\n"
    "                   (default 0: loss_smoothed equals loss)\n"
    "  --output FILE    write FILE (atomically) instead of standard output\n"
    "  --weights DTYPE  the model's weights and buffers alone, converted to DTYPE (round to\n"
    "                   nearest even), as a safetensors file with PyTorch's state_dict keys\n"
    "                   (safetensors.torch.load_file, then load_state_dict); from the run's\n"
    "                   latest checkpoint (checkpoint.at_end=true) or --checkpoint FILE.zip\n";

}  // namespace

// A TensorBoard export writes a folder: into a --run folder (or one below it) it would add event
// files to the log it reads, which the next import reads as more runs. Outputs never change inputs.
void refuseFolderInsideInput(const std::string& out, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(fs::absolute(out, ec), ec);
  for (const std::string& in : inputs) {
    std::error_code e2;
    const fs::path i = fs::weakly_canonical(fs::absolute(in, e2), e2);
    if (ec || e2) continue;
    auto [ie, oe] = std::mismatch(i.begin(), i.end(), o.begin(), o.end());
    if (ie == i.end())
      throw std::runtime_error(out + ": is inside the input " + in +
                               "; writing event files there would change the log it reads: give a folder outside it");
  }
}

int usageError(const std::string& what) {
  printError("export", what);
  return 2;
}

#ifndef AMP_CLI_HAS_CHARTS
// Without the desktop app's chart library (AMP_BUILD_GUI=OFF) image formats are refused in one
// line; with it, cliui_export_charts.cpp renders them.
int exportCharts(const std::vector<RunRecord>& runs, const std::string& format,
                 const std::string& output) {
  (void)runs;
  (void)output;
  return usageError("--format " + format +
                    ": image export needs the charts of the desktop app, which this ampstudio-cli is "
                    "built without; use --format csv|json, or File > Export in AMP Studio");
}
#endif

int cmdExport(const Args& args) {
  std::vector<std::string> dirs;
  std::string format, out, weights, checkpoint;
  double smoothing = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError(s + " needs a value");
      return args[++i];
    };
    try {
      if (s == "--help" || s == "-h") {
        std::fputs(kExportUsage, stdout);
        return 0;
      } else if (s == "--run") dirs.push_back(value());
      else if (s == "--format") format = value();
      else if (s == "--output" || s == "-o") out = value();
      else if (s == "--weights") weights = value();
      else if (s == "--checkpoint") checkpoint = value();
      else if (s == "--smoothing") {
        const std::string v = value();
        bool ok = false;
        smoothing = QString::fromStdString(v).toDouble(&ok);
        // The chart's slider stops at 0.999; 1 would freeze the curve at its first value.
        if (!ok || !(smoothing >= 0 && smoothing < 1))
          throw UsageError("--smoothing: expected a number in [0, 1), got " + shownValue(v));
      } else throw UsageError("unknown option " + shownValue(s));
    } catch (const UsageError& e) {
      return usageError(e.what());
    }
  }
  if (!weights.empty()) {
    if (!format.empty()) return usageError("--weights and --format are two exports: give one");
    try {
      std::vector<std::string> inputs = dirs;
      inputs.push_back(checkpoint);
      refuseOwnInput(out, inputs);
    } catch (const std::exception& e) {
      return usageError(e.what());
    }
    return exportWeightsFile(dirs, checkpoint, weights, out);
  }
  if (!checkpoint.empty()) return usageError("--checkpoint goes with --weights");
  const bool image = format == "png" || format == "svg" || format == "pdf";
  const bool tensorboard = format == "tensorboard";
  if (dirs.empty() || (format != "csv" && format != "json" && format != "ampx" && !image && !tensorboard))
    return usageError("needs --run DIR and --format csv|json|png|svg|pdf|ampx|tensorboard");
  if (format == "ampx" && out.empty()) return usageError("--format ampx needs --output FILE.ampx");
  if (tensorboard && out.empty()) return usageError("--format tensorboard needs --output DIR (a folder)");

  std::vector<RunRecord> runs;
  try {
    if (!out.empty() && !tensorboard) {
      checkOutputFile(out);
      refuseOwnInput(out, dirs);
    }
    if (tensorboard && QFileInfo(QString::fromStdString(out)).exists() && !QFileInfo(QString::fromStdString(out)).isDir())
      throw std::runtime_error(out + ": not a folder (--format tensorboard writes a folder of event files)");
    if (tensorboard) refuseFolderInsideInput(out, dirs);
    for (const auto& d : dirs)
      for (RunRecord& r : loadRunsOrTensorBoard(QString::fromStdString(d))) runs.push_back(std::move(r));
  } catch (const std::exception& e) {  // RunRecordError, ConfigError (config.json), OutputError
    return usageError(e.what());
  }
  for (const auto& r : runs)
    for (const auto& w : r.warnings) printError("export", "warning: " + w.toStdString());
  // The same run exported twice (or two folders of one preset) would share a "run" value.
  std::set<QString> seen;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    QString name = runs[i].name;
    for (int k = 2; seen.count(name); ++k) name = runs[i].name + " (" + QString::number(k) + ")";
    seen.insert(name);
    runs[i].name = name;
  }
  if (image) return exportCharts(runs, format, out);
  if (tensorboard) {
    std::vector<const RunRecord*> selected;
    for (const auto& r : runs) selected.push_back(&r);
    try {
      const std::vector<QString> files = writeTensorBoardFolder(selected, QString::fromStdString(out));
      for (const QString& f : files) std::printf("%s\n", f.toStdString().c_str());
      std::printf("%zu run(s): tensorboard --logdir %s\n", files.size(), out.c_str());
    } catch (const std::exception& e) {
      printError("export", e.what());
      return 2;
    }
    return 0;
  }
  if (format == "ampx") {
    std::vector<ExperimentRun> experiment;
    for (RunRecord& r : runs) experiment.push_back(ExperimentRun{std::move(r), QString(), true, QByteArray()});
    try {
      saveExperiment(QString::fromStdString(out), experiment);  // atomic: a failure leaves what was there
    } catch (const std::exception& e) {
      printError("export", e.what());
      return 2;
    }
    std::printf("%zu run(s) in %s\n", experiment.size(), out.c_str());
    return 0;
  }

  std::vector<const RunRecord*> selected;
  for (const auto& r : runs) selected.push_back(&r);
  const QByteArray text = format == "csv" ? metricsToCsv(selected, smoothing) : metricsToJson(selected, smoothing).toJson();
  if (out.empty()) {
    std::fwrite(text.constData(), 1, static_cast<std::size_t>(text.size()), stdout);
    return 0;
  }
  return writeOutputFile("export", out, std::string_view(text.constData(), static_cast<std::size_t>(text.size()))) ? 0 : 2;
}

}  // namespace amp::cli
