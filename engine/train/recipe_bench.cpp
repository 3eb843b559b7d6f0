#include "engine/train/recipe_bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/backend/backend.h"
#include "engine/train/run_summary.h"
#include "engine/train/trainer.h"

namespace amp {

namespace {

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "null";  // JSON has no inf/nan
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // no control characters in our texts
    out += c;
  }
  return out + "\"";
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

BenchRun benchRun(const RunConfig& config, const std::string& label,
                  void (*progress)(std::int64_t, std::int64_t)) {
  // A run of N steps gets kBenchWarmup more in front, untimed and unrecorded, as the peers warm
  // up before their clocks start (first launches load kernels, plans and handles are made).
  RunConfig c = config;
  const std::int64_t warmup = c.train.steps > 0 ? kBenchWarmup : 0;
  c.train.steps += warmup;
  Trainer trainer(c);
  Backend& be = trainer.backend();
  const DType gemmDtype = config.mode == PrecisionMode::AmpBf16 ? DType::BF16
                          : config.mode == PrecisionMode::Fp32  ? DType::F32
                                                                : DType::F16;
  BenchRun r;
  r.label = label;
  r.backend = be.name();
  r.compute = be.computePath(gemmDtype);
  r.native = be.nativeCompute(gemmDtype);
  r.samples = config.train.batchSize * config.train.accumulation;
  RunSummaryBuilder summary;
  using Clock = std::chrono::steady_clock;
  while (trainer.stepsDone() < warmup) trainer.step();
  const auto t0 = Clock::now();
  double epochWall = 0;
  while (!trainer.finished()) {
    const auto s0 = Clock::now();
    const StepMetrics m = trainer.step();
    // The step's training part: its evaluation (at an epoch's end) is not training time.
    epochWall += std::chrono::duration<double>(Clock::now() - s0).count() -
                 (m.testLoss ? trainer.lastEvaluationSeconds() : 0.0);
    if (m.epochEnd) {
      r.epochSeconds.push_back(epochWall);
      epochWall = 0;
    }
    summary.add(m);
    ++r.steps;
    r.replayedSteps += trainer.lastStepGraph() == "replayed";
    if (progress) progress(trainer.stepsDone() - warmup, trainer.totalSteps() - warmup);
  }
  // Each step ends by reading its stats back, so the device has finished when the clock stops.
  r.totalSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const RunSummary s = summary.summary();
  r.medianStepMs = s.medianStepMs;
  r.gemmTflops = s.medianGemmGflops / 1e3;
  r.peak = s.peakMemory;
  r.finalLoss = s.finalLoss;
  r.skippedSteps = s.skippedSteps;
  r.graphNote = trainer.stepGraphNote();
  if (s.finalTestAcc) r.finalTestAcc = *s.finalTestAcc;
  if (config.model.name == "recipe_mlp")
    r.standaloneTflops = standaloneGemmTflops(be, gemmDtype, config.train.batchSize, config.model.width);
  return r;
}

void benchProgressOnStderr(std::int64_t step, std::int64_t total) {
  std::fprintf(stderr, "\r  step %lld/%lld", static_cast<long long>(step), static_cast<long long>(total));
  if (step == total) std::fprintf(stderr, "\r%*s\r", 24, "");
}

double standaloneGemmTflops(Backend& be, DType dtype, std::int64_t batch, std::int64_t width) {
  // Values that keep every product and sum finite in fp16; the rate does not depend on them.
  Tensor x = be.empty({batch, width}, dtype, MemCategory::Workspace);
  Tensor w = be.empty({width, width}, dtype, MemCategory::Workspace);
  Tensor outAct = be.empty({batch, width}, dtype, MemCategory::Workspace);
  Tensor outWei = be.empty({width, width}, dtype, MemCategory::Workspace);
  be.fill(x, 0.015625f);
  be.fill(w, 0.0078125f);
  struct Shape3 { const Tensor* a; bool ta; const Tensor* b; bool tb; Tensor* c; };
  const Shape3 shapes[] = {{&x, false, &w, true, &outAct},    // forward: x · W^T
                           {&x, false, &w, false, &outAct},   // backward data: dy · W
                           {&x, true, &x, false, &outWei}};   // backward weights: dy^T · x
  double seconds = 0, flops = 0;
  for (const Shape3& s : shapes) {
    for (int i = 0; i < 3; ++i) be.gemm(*s.a, s.ta, *s.b, s.tb, *s.c);
    std::vector<double> times;
    double perCall = 0;
    for (int i = 0; i < 15; ++i) {
      be.resetGemmCounters();
      be.gemm(*s.a, s.ta, *s.b, s.tb, *s.c);
      const GemmCounters c = be.gemmCounters();  // waits for the GEMM's events on a GPU
      times.push_back(c.seconds);
      perCall = c.flops;
    }
    seconds += median(times);
    flops += perCall;
  }
  be.resetGemmCounters();
  return seconds > 0 ? flops / seconds / 1e12 : 0.0;
}

std::string benchTable(const std::vector<BenchRun>& runs) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-6s %-9s %10s %9s %11s %11s %11s %12s %12s\n", "mode",
                "compute", "ms/step", "total s", "GEMM TF/s", "alone TF/s", "in step", "peak",
                "activations");
  out += line;
  const auto act = std::size_t(MemCategory::Activations);
  for (const BenchRun& r : runs) {
    std::snprintf(line, sizeof line, "%-6s %-9s %10.3f %9.2f %11.2f %11.2f %10.0f%% %12s %12s\n",
                  r.label.c_str(), r.native ? "native" : "emulated", r.medianStepMs,
                  r.totalSeconds, r.gemmTflops, r.standaloneTflops, 100.0 * r.gemmEfficiency(),
                  formatBytes(r.peak.totalPeak).c_str(), formatBytes(r.peak.peak[act]).c_str());
    out += line;
  }
  if (runs.size() >= 2) {
    const BenchRun& base = runs.front();
    for (std::size_t i = 1; i < runs.size(); ++i) {
      const BenchRun& r = runs[i];
      std::snprintf(line, sizeof line,
                    "%s vs %s: speed-up %.2fx (median step), %.2fx (total); peak memory %.2fx, "
                    "activations %.2fx\n",
                    r.label.c_str(), base.label.c_str(), ratio(base.medianStepMs, r.medianStepMs),
                    ratio(base.totalSeconds, r.totalSeconds),
                    ratio(double(r.peak.totalPeak), double(base.peak.totalPeak)),
                    ratio(double(r.peak.peak[act]), double(base.peak.peak[act])));
      out += line;
    }
  }
  for (const BenchRun& r : runs) {
    out += r.label + " on " + r.backend + ": " + r.compute + "\n";
    if (r.replayedSteps > 0)
      out += "  " + std::to_string(r.replayedSteps) + " of " + std::to_string(r.steps) +
             " timed steps replayed as a CUDA graph (AMP_CUDA_DISABLE=cuda-graphs: none)\n";
    if (!r.graphNote.empty()) out += "  " + r.graphNote + "\n";
  }
  return out;
}

std::string benchJson(const std::vector<BenchRun>& runs,
                      const std::vector<std::pair<std::string, std::string>>& header) {
  std::string j = "{\n";
  for (const auto& [k, v] : header) j += "  " + quoted(k) + ": " + v + ",\n";
  j += "  \"runs\": [";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const BenchRun& r = runs[i];
    j += std::string(i ? ",\n" : "\n") + "    {\"mode\": " + quoted(r.label) +
         ", \"backend\": " + quoted(r.backend) + ", \"compute\": " + quoted(r.compute) +
         ", \"native\": " + (r.native ? "true" : "false") +
         ", \"steps\": " + std::to_string(r.steps) +
         ", \"median_ms_per_step\": " + fixed(r.medianStepMs, 4) +
         ", \"total_s\": " + fixed(r.totalSeconds, 4) +
         ", \"samples_per_s\": " + fixed(ratio(double(r.samples), r.medianStepMs / 1e3), 1) +
         ", \"gemm_tflops_in_step\": " + fixed(r.gemmTflops, 3) +
         ", \"gemm_tflops_standalone\": " + fixed(r.standaloneTflops, 3) +
         ", \"peak_bytes\": {";
    for (int c = 0; c < kMemCategoryCount; ++c)
      j += quoted(std::string(memCategoryName(static_cast<MemCategory>(c)))) + ": " +
           std::to_string(r.peak.peak[std::size_t(c)]) + ", ";
    j += "\"total\": " + std::to_string(r.peak.totalPeak) + "}" +
         (r.peak.deviceTotal > 0 ? ", \"device_total_bytes\": " + std::to_string(r.peak.deviceTotal)
                                 : std::string()) +
         ", \"final_loss\": " + fixed(r.finalLoss, 6) +
         ", \"skipped_steps\": " + std::to_string(r.skippedSteps) +
         ", \"graph_replayed_steps\": " + std::to_string(r.replayedSteps) +
         (r.graphNote.empty() ? std::string() : ", \"graph_note\": " + quoted(r.graphNote)) + "}";
  }
  j += "\n  ],\n  \"ratios_vs_first\": {";
  const auto act = std::size_t(MemCategory::Activations);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const BenchRun& r = runs[i];
    const BenchRun& b = runs.front();
    j += std::string(i > 1 ? ", " : "") + quoted(r.label) +
         ": {\"speedup_median_step\": " + fixed(ratio(b.medianStepMs, r.medianStepMs), 3) +
         ", \"speedup_total\": " + fixed(ratio(b.totalSeconds, r.totalSeconds), 3) +
         ", \"peak_memory\": " + fixed(ratio(double(r.peak.totalPeak), double(b.peak.totalPeak)), 3) +
         ", \"activations\": " + fixed(ratio(double(r.peak.peak[act]), double(b.peak.peak[act])), 3) + "}";
  }
  return j + "}\n}\n";
}

}  // namespace amp
