// The CPU cost of fp8 training (issue: the fp8 step at most 1.5x the bf16 step of the same model,
// nvfp4 at most 2x): a training step of the gpt preset's model (4 blocks, 128 wide, context 128,
// batch 32) on a corpus made here, in bf16 and in each fp8 recipe, and the quantiser alone on one
// activation-sized operand. Run side by side in one sitting and compare the ratios:
//   ./build/release/tests/bench/bench_fp8_step --benchmark_min_time=3
// (CI builds it, never times it.) Set OMP_WAIT_POLICY=passive on a shared machine.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/amp/fp8_quantize.h"
#include "engine/config/config_schema.h"
#include "engine/train/trainer.h"

using namespace amp;

namespace {

std::string corpus() {
  static const std::string path = [] {
    const auto p = std::filesystem::temp_directory_path() / "ampstudio_bench_fp8_corpus.txt";
    std::ofstream f(p);
    for (int i = 0; i < 20000; ++i) f << "a small corpus line number " << i % 97 << " for the bench.\n";
    return p.string();
  }();
  return path;
}

void step(benchmark::State& state, const std::vector<std::pair<std::string, std::string>>& mode) {
  RunConfig c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "gpt"}, {"model.layers", "4"}, {"model.heads", "4"}, {"model.embd", "128"},
           {"model.block", "128"}, {"data.name", "text"}, {"data.path", corpus()}, {"optimizer.name", "adamw"},
           {"train.batch_size", "32"}, {"train.steps", "1000000"}, {"train.histogram_every", "0"},
           {"train.eval_every", "1000000"}})
    setConfigValue(c, k, v);
  for (const auto& [k, v] : mode) setConfigValue(c, k, v);
  Trainer t(c);
  t.step();  // the first step allocates
  for (auto _ : state) benchmark::DoNotOptimize(t.step().loss);
}

void quantize(benchmark::State& state, QuantSpec::Scaling scaling) {
  const std::int64_t rows = 4096, cols = 512;
  std::vector<float> x(std::size_t(rows * cols)), out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i)) * 3.f;
  QuantSpec s;
  s.scaling = scaling;
  s.tensorScale = 100.f;
  s.block = scaling == QuantSpec::Scaling::Mx ? 32 : scaling == QuantSpec::Scaling::Nvfp4 ? 16 : 128;
  if (scaling == QuantSpec::Scaling::Nvfp4) s.format = MiniFormat::E2M1;
  QuantStats st;
  for (auto _ : state) quantizeDequantize(x.data(), out.data(), rows, cols, s, &st);
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

}  // namespace

BENCHMARK_CAPTURE(step, bf16, {{"amp.mode", "bf16"}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(step, fp8_delayed, {{"amp.mode", "fp8"}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(step, fp8_mxfp8, {{"amp.mode", "fp8"}, {"fp8.recipe", "mxfp8"}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(step, fp8_blockwise, {{"amp.mode", "fp8"}, {"fp8.recipe", "blockwise"}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(step, nvfp4, {{"amp.mode", "fp8"}, {"fp8.recipe", "nvfp4"}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(quantize, per_tensor, QuantSpec::Scaling::PerTensor)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(quantize, mx, QuantSpec::Scaling::Mx)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(quantize, blockwise, QuantSpec::Scaling::Blockwise)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(quantize, nvfp4, QuantSpec::Scaling::Nvfp4)->Unit(benchmark::kMillisecond);
