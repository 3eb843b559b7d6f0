// ampstudio-cli bench: the PyTorch AMP recipe in fp32, fp16 (emulated on the CPU) and bf16
// (native or emulated, as this CPU allows; the table says which): median ms/step, GEMM GFLOP/s
// inside the step against oneDNN's standalone rate, and peak bytes by category. A benchmark,
// never a timed test.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "app/cli_experiment.h"
#include "app/cli_report.h"
#include "engine/io/metrics_json.h"
#include "kernels/cpu/onednn_matmul.h"

namespace amp::cli {

namespace {

// oneDNN's own f32 rate on the recipe's three GEMM shapes (forward x·W^T, backward-data dy·W,
// backward-weights dy^T·x), outside any training step: total flops over the sum of each shape's
// median time, the reference for "GEMM GFLOP/s in the step".
double standaloneF32Gflops(std::int64_t batch, std::int64_t width) {
  std::vector<float> act(batch * width, 0.5f), wei(width * width, 0.25f),
      out(std::max(batch, width) * width);
  const cpu::MatmulShape shapes[] = {{batch, width, width, false, true},
                                     {batch, width, width, false, false},
                                     {width, width, batch, true, false}};
  double flops = 0, seconds = 0;
  for (const auto& s : shapes) {
    const float* a = act.data();                           // x or dy: (batch, width)
    const float* b = s.transA ? act.data() : wei.data();  // backward-weights: x, else W
    auto once = [&] {
      cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, s, a, b, nullptr, out.data());
    };
    for (int i = 0; i < 3; ++i) once();
    std::vector<double> times;
    for (int i = 0; i < 15; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    flops += 2.0 * double(s.m) * double(s.n) * double(s.k);
    seconds += median(times);
  }
  return flops / seconds / 1e9;
}

}  // namespace

int cmdBench(const Args& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: ampstudio-cli bench [--set key=value]... [--steps N] [--json FILE]\n"
          "Times the recipe preset (model.width, model.layers, train.batch_size settable) in\n"
          "fp32, fp16 (emulated) and bf16; prints a table, then the same as JSON.\n");
      return 0;
    }
  ExperimentArgs ea;
  std::vector<NamedConfig> configs;
  std::string jsonPath;
  std::string steps = "40";
  try {
    ea = parseExperimentArgs(args, {"--steps=", "--json="});
    for (std::size_t i = 0; i + 1 < ea.rest.size(); i += 2) {
      if (ea.rest[i] == "--json") jsonPath = ea.rest[i + 1];
      if (ea.rest[i] == "--steps") steps = ea.rest[i + 1];
    }
    if (ea.preset.empty()) ea.preset = "recipe";
    ea.overrides.insert(ea.overrides.begin(), {"train.steps=" + steps, "train.histogram_every=0"});
    configs = buildConfigs(ea);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampstudio-cli bench: %s\n", e.what());
    return 2;
  }
  const RunConfig base = configs.front().config;
  const double standalone = standaloneF32Gflops(base.train.batchSize, base.model.width);
  std::vector<LabelledResult> results;
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    RunConfig c = base;
    setConfigValue(c, "amp.mode", mode);
    results.push_back({mode, runToEnd(c, "", true, false, mode)});
  }
  std::printf("recipe MLP: width %lld, batch %lld, %d layers, %s steps (median after 3 warm-up)\n",
              static_cast<long long>(base.model.width), static_cast<long long>(base.train.batchSize),
              base.model.layers, steps.c_str());
  std::printf("%-6s %-9s %10s %12s %10s %12s %12s %12s %12s %12s\n", "mode", "compute", "ms/step",
              "GEMM GF/s", "vs 1xGEMM", "weights", "masters", "grads", "activations", "opt_state");
  QJsonArray rows;
  for (const auto& r : results) {
    const RunSummary& s = r.result.summary;
    const auto& pk = s.peakMemory.peak;
    const std::string compute = r.result.extra["compute"].toString().toStdString();
    const bool emulated = compute.find("emulated") != std::string::npos;
    std::printf("%-6s %-9s %10.2f %12.1f %9.0f%% %12s %12s %12s %12s %12s\n", r.label.c_str(),
                emulated ? "emulated" : "native", s.medianStepMs,
                s.medianGemmGflops, 100.0 * s.medianGemmGflops / standalone,
                formatBytes(pk[0]).c_str(), formatBytes(pk[1]).c_str(), formatBytes(pk[2]).c_str(),
                formatBytes(pk[3]).c_str(), formatBytes(pk[4]).c_str());
    QJsonObject o;
    o["mode"] = QString::fromStdString(r.label);
    o["compute"] = r.result.extra["compute"];
    o["median_ms_per_step"] = s.medianStepMs;
    o["samples_per_s"] = s.medianSamplesPerS;
    o["gemm_gflops_in_step"] = s.medianGemmGflops;
    o["peak_bytes"] = memoryToJson(s.peakMemory, true);
    rows.append(o);
  }
  for (const auto& r : results)
    std::printf("%s: %s\n", r.label.c_str(),
                r.result.extra["compute"].toString().toStdString().c_str());
  const auto act = int(MemCategory::Activations);
  const RunSummary& f32 = results[0].result.summary;
  std::printf("oneDNN standalone f32 matmul on the step's shapes (%lldx%lldx%lld, forward and both "
              "backward): %.1f GFLOP/s; fp32 GEMMs in the step at %.0f%% of it\n",
              static_cast<long long>(base.train.batchSize), static_cast<long long>(base.model.width),
              static_cast<long long>(base.model.width), standalone,
              100.0 * results[0].result.summary.medianGemmGflops / standalone);
  std::printf("fp16/fp32 step time %.2fx; bf16 speed-up %.2fx; activation peak fp16/fp32 %.2f, bf16/fp32 %.2f\n",
              results[1].result.summary.medianStepMs / f32.medianStepMs,
              f32.medianStepMs / results[2].result.summary.medianStepMs,
              double(results[1].result.summary.peakMemory.peak[act]) / double(f32.peakMemory.peak[act]),
              double(results[2].result.summary.peakMemory.peak[act]) / double(f32.peakMemory.peak[act]));
  QJsonObject json;
  json["width"] = static_cast<double>(base.model.width);
  json["batch"] = static_cast<double>(base.train.batchSize);
  json["layers"] = base.model.layers;
  json["standalone_f32_gflops"] = standalone;
  json["backend"] = results[0].result.extra["backend"];
  json["runs"] = rows;
  const QByteArray text = QJsonDocument(json).toJson();
  std::fwrite(text.constData(), 1, text.size(), stdout);
  if (!jsonPath.empty()) {
    QFile f(QString::fromStdString(jsonPath));
    if (f.open(QIODevice::WriteOnly)) f.write(text);
  }
  return 0;
}

}  // namespace amp::cli
