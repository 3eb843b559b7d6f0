// The benchmark behind `ampstudio-cli bench` and the Qt-free `ampstudio-gpu-bench`: the PyTorch
// AMP recipe (or any config) run to its end per precision mode, with the figures the peers
// report (median step by the device's clock, total time, peak memory) plus what only we can
// show: the GEMMs' rate inside the step against the same GEMMs alone on the same backend.
// A benchmark, never a timed test. No Qt: the GPU machine has none.
#pragma once

#include <string>
#include <vector>

#include "engine/config/run_config.h"
#include "engine/core/memory_tracker.h"

namespace amp {

class Backend;

struct BenchRun {
  std::string label;    // "fp32", "fp16", "bf16"
  std::string backend;  // "cpu", "cuda:0"
  std::string compute;  // how its GEMMs compute here (Backend::computePath)
  bool native = true;   // Backend::nativeCompute
  std::int64_t steps = 0;
  std::int64_t samples = 0;       // per step
  double medianStepMs = 0;        // CUDA events on a GPU, wall on the CPU
  double totalSeconds = 0;        // every timed step, wall clock (the recipe's "total time")
  double gemmTflops = 0;          // median over the steps after warm-up: GEMM flops / GEMM time
  double standaloneTflops = 0;    // the step's GEMM shapes and dtype alone on the same backend
  MemorySnapshot peak;            // max over the run; device bytes on a GPU
  double finalLoss = 0;
  std::int64_t skippedSteps = 0;
  // Timed steps a CUDA graph replayed (Trainer::lastStepGraph), and why graphs went off when a
  // capture failed: a figure says which kind of step it measured.
  std::int64_t replayedSteps = 0;
  std::string graphNote;
  // Wall-clock training time of each completed epoch (evaluation excluded), as the peers'
  // per-epoch figures; and the last evaluation's accuracy (-1: none).
  std::vector<double> epochSeconds;
  double finalTestAcc = -1;
  // GEMM rate in the step as a fraction of the standalone rate (0 when either is unknown).
  double gemmEfficiency() const { return standaloneTflops > 0 ? gemmTflops / standaloneTflops : 0; }
};

// Untimed steps before a step-counted run's clock starts (pytorch_recipe_gpu.py warms up 5).
inline constexpr std::int64_t kBenchWarmup = 5;

// Runs `config` (its amp.mode as set) to the end on the backend it names: train.steps timed
// steps after kBenchWarmup untimed ones (an epoch-counted run has no warm-up: its epochs are
// timed one by one). progress(step, total) is called after each timed step when given. Throws
// what the Trainer throws.
BenchRun benchRun(const RunConfig& config, const std::string& label,
                  void (*progress)(std::int64_t, std::int64_t) = nullptr);

// A progress callback for benchRun: "step N/M" rewritten in place on stderr (for terminals).
void benchProgressOnStderr(std::int64_t step, std::int64_t total);

// TFLOP/s of the recipe MLP's three GEMM shapes (forward x·W^T, backward-data dy·W, backward-
// weights dy^T·x at batch x width x width) in `dtype` on `backend`, alone: the median of 15
// timed repetitions each after 3 warm-ups, by the backend's own GEMM clock (CUDA events on a GPU).
double standaloneGemmTflops(Backend& backend, DType dtype, std::int64_t batch, std::int64_t width);

// The runs as a table (one row per run, then the AMP/first-run ratios), as the CLI prints it.
std::string benchTable(const std::vector<BenchRun>& runs);
// The same as one JSON object: {"runs": [...], "ratios": {...}} plus the `header` fields given
// as ready JSON text pairs (key, value).
std::string benchJson(const std::vector<BenchRun>& runs,
                      const std::vector<std::pair<std::string, std::string>>& header);

}  // namespace amp
