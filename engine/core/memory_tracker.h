// Accounting of every byte a backend allocates, by category, so the memory chart is truthful.
// One tracker per backend instance (per run): concurrent runs never mix their figures.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace amp {

enum class MemCategory : std::uint8_t {
  Weights,         // the weights the model computes with: fp32 params in fp32 mode, the
                   // 16-bit casts under autocast, the fp16 params in pure-fp16 mode
  MasterWeights,   // fp32 parameters kept beside 16-bit compute copies (AMP modes)
  Gradients,       // parameter gradients
  Activations,     // saved forward values and activation gradients
  OptimizerState,  // momentum, Adam moments
  Workspace,       // temporaries (GEMM scratch, conversions, data batches)
};
constexpr int kMemCategoryCount = 6;

constexpr std::string_view memCategoryName(MemCategory c) {
  constexpr std::string_view names[kMemCategoryCount] = {
      "weights", "master_weights", "gradients", "activations", "optimizer_state", "workspace"};
  return names[static_cast<int>(c)];
}

// "812 B", "3.4 KiB", "28.0 MiB", "1.25 GiB" (binary units: allocators count bytes).
std::string formatBytes(std::int64_t bytes);

struct MemorySnapshot {
  std::array<std::int64_t, kMemCategoryCount> current{};
  std::array<std::int64_t, kMemCategoryCount> peak{};  // peak of each category on its own
  std::int64_t totalCurrent = 0;
  std::int64_t totalPeak = 0;  // peak of the sum, not the sum of peaks
  // The whole device's memory and how much of it is free now (other programs and the CUDA
  // context included), as cudaMemGetInfo reports it after the step; 0 where the backend does not
  // know (the CPU). The categories above are what this run's tensors hold, as
  // torch.cuda.memory_allocated counts them.
  std::int64_t deviceTotal = 0;
  std::int64_t deviceFree = 0;
};

class MemoryTracker {
 public:
  void onAlloc(MemCategory c, std::int64_t bytes);
  void onFree(MemCategory c, std::int64_t bytes);
  MemorySnapshot snapshot() const;
  // Starts a new peak window (e.g. after warm-up) from the current figures.
  void resetPeaks();

 private:
  std::array<std::atomic<std::int64_t>, kMemCategoryCount> m_current{};
  std::array<std::atomic<std::int64_t>, kMemCategoryCount> m_peak{};
  std::atomic<std::int64_t> m_total{0};
  std::atomic<std::int64_t> m_totalPeak{0};
};

}  // namespace amp
