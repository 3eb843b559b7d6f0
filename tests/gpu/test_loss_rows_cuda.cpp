// The loss kernels rewritten for the GPT's sizes (issue 41): the cross-entropy forward with a warp
// per row against the thread-per-row kernel (the CPU's order) and the CPU, and the step's loss
// added in kernels/common/row_sum_order.h's blocked order, bit for bit against that order
// computed on the host from the device's own row losses. At 4096 rows of 50257 classes (an
// eighth of the GPT's target batch) and at Fashion-MNIST's 64 x 10.
#include <cuda_runtime.h>

#include <cmath>

#include "engine/backend/cuda_backend.h"
#include "kernels/common/row_sum_order.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

std::vector<double> downloadDoubles(CudaBackend& be, const Tensor& t, std::int64_t m) {
  std::vector<double> out(static_cast<std::size_t>(m));
  be.synchronize("row losses");
  EXPECT_EQ(cudaMemcpy(out.data(), t.rawData(), out.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

}  // namespace

TEST(LossRowsCuda, WarpPerRowMatchesThreadPerRowAndTheStepSumFollowsTheBlockedOrder) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend be(0, false);
  auto cpu = makeBackend("cpu");
  for (const auto [m, c] : {std::pair<std::int64_t, std::int64_t>{64, 10}, {4096, 50257}}) {
    std::vector<std::int32_t> labels(static_cast<std::size_t>(m));
    for (std::int64_t r = 0; r < m; ++r) labels[std::size_t(r)] = std::int32_t((r * 7919) % c);
    for (DType d : {DType::F16, DType::F32}) {
      const std::string what = std::to_string(m) + "x" + std::to_string(c) + " " + name(d);
      const std::vector<float> z = finiteValues(std::size_t(m * c), 17, 4.f);
      const Tensor logits = be.fromHost(z, {m, c}, d, MemCategory::Activations);
      const Tensor lab = be.fromHostInt(labels, {m}, MemCategory::Workspace);
      Tensor probsWarp = be.empty({m, c}, DType::F32, MemCategory::Activations);
      Tensor probsThread = be.empty({m, c}, DType::F32, MemCategory::Activations);
      Tensor rowsWarp = be.empty({2 * m}, DType::F32, MemCategory::Workspace);
      Tensor rowsThread = be.empty({2 * m}, DType::F32, MemCategory::Workspace);
      Tensor bad = be.zeros({1}, DType::I32, MemCategory::Workspace);
      const int code = d == DType::F16 ? 1 : 0;
      cuda::launchCrossEntropyForward(code, logits.rawData(), lab.data<std::int32_t>(), m, c, probsWarp.data<float>(),
                                      static_cast<double*>(rowsWarp.rawData()), bad.data<std::int32_t>(), be.stream(), true);
      cuda::launchCrossEntropyForward(code, logits.rawData(), lab.data<std::int32_t>(), m, c,
                                      probsThread.data<float>(), static_cast<double*>(rowsThread.rawData()),
                                      bad.data<std::int32_t>(), be.stream(), false);
      const std::vector<double> warp = downloadDoubles(be, rowsWarp, m), thread = downloadDoubles(be, rowsThread, m);
      for (std::int64_t r = 0; r < m; ++r)
        ASSERT_NEAR(warp[std::size_t(r)], thread[std::size_t(r)], 1e-13 * std::fabs(thread[std::size_t(r)]))
            << what << " row " << r;
      expectCloseValues(be.toHostFloat(probsThread), be.toHostFloat(probsWarp), 0, 2.4e-7, what + " probabilities");
      EXPECT_EQ(be.toHostInt(bad)[0], 0) << what;

      // The step's loss: the same row losses (the warp kernel's) added in the blocked order.
      Tensor probs = be.empty({m, c}, DType::F32, MemCategory::Activations);
      be.beginStep();
      be.crossEntropyForwardIntoStep(logits, lab, probs);
      const StepStats s = be.readStepStats();
      const double want = rowSumBlocked(warp.data(), m) / double(m);
      EXPECT_EQ(s.lossSum, want) << what;
      // And the CPU's loss, in row order, within the rounding of the two orders.
      const Tensor zc = cpu->fromHost(z, {m, c}, d, MemCategory::Activations);
      const Tensor lc = cpu->fromHostInt(labels, {m}, MemCategory::Workspace);
      Tensor pc = cpu->empty({m, c}, DType::F32, MemCategory::Activations);
      const double cpuLoss = cpu->crossEntropyForward(zc, lc, pc);
      EXPECT_NEAR(s.lossSum, cpuLoss, 1e-12 * std::fabs(cpuLoss)) << what;
    }
  }
}
