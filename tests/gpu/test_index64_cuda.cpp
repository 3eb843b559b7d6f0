// 64-bit index paths (issue 41): tensors past 2^31 elements, or past 2^32 bytes, as the GPT at its
// target shape makes them (ctx 1024 x batch 32 = 32768 rows of a 50257-token vocabulary: 1.65e9
// logits, 6.6 GB of fp32 probabilities). An index or byte offset kept in 32 bits would leave the
// far end unwritten or write the wrong place; each check reads every element back through a
// reduction whose exact answer is known (unwritten memory is filled with NaN first). Needs about
// 14 GB of device memory; skips where there is less.
#include <cuda_runtime.h>

#include <cmath>

#include "engine/backend/cuda_backend.h"
#include "kernels/common/float16.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;

namespace {
bool enoughMemory(std::size_t bytes, std::string& why) {
  std::size_t freeBytes = 0, total = 0;
  if (cudaMemGetInfo(&freeBytes, &total) != cudaSuccess) {
    cudaGetLastError();
    why = "cudaMemGetInfo failed";
    return false;
  }
  why = std::to_string(freeBytes >> 20) + " MiB free, " + std::to_string(bytes >> 20) + " MiB needed";
  return freeBytes > bytes;
}
}  // namespace

// Past 2^31 elements: fill, scale, cast, accumulate, a fault at the last index, and the fused
// unscale (a multi-tensor launch) over one fp32 tensor of 8.6 GB.
TEST(Index64Cuda, ElementwiseAndMultiTensorKernelsReachPast2To31Elements) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend be(0, false);
  const std::int64_t n = (std::int64_t(1) << 31) + 1000;
  std::string why;
  if (!enoughMemory(std::size_t(n) * 8 + (std::size_t(1) << 30), why)) GTEST_SKIP() << why;
  {
    Tensor h = be.empty({n}, DType::F16, MemCategory::Workspace);
    be.fill(h, 1.f);
    EXPECT_EQ(be.sumOfSquares(h), double(n)) << "fill";
    be.scaleInPlace(h, 2.f);
    EXPECT_EQ(be.sumOfSquares(h), 4.0 * double(n)) << "scale";
    Tensor b = be.empty({n}, DType::BF16, MemCategory::Workspace);
    be.fill(b, gpu_test::kNaN);
    be.castInto(h, b);
    EXPECT_EQ(be.sumOfSquares(b), 4.0 * double(n)) << "cast";
    be.accumulate(h, b);
    EXPECT_EQ(be.sumOfSquares(h), 16.0 * double(n)) << "accumulate";
    be.setElement(h, n - 1, INFINITY);
    EXPECT_EQ(be.countNonFinite(h), 1) << "the last element";
  }
  Tensor g = be.empty({n}, DType::F32, MemCategory::Gradients);
  be.fill(g, 4.f);
  Tensor* grads[] = {&g};
  const UnscaleResult u = be.unscaleAndCheck(grads, 0.5f);
  EXPECT_FALSE(u.foundInf);
  EXPECT_EQ(u.sumOfSquares, 4.0 * double(n)) << "unscale";
  EXPECT_EQ(be.sumOfSquares(g), 4.0 * double(n));
}

// The GPT's loss at its target shape: zero logits give every row ln(V), and every gradient
// element (p - onehot) rounded to fp16 is known, so the sum of squares over all 1.65e9 is too.
TEST(Index64Cuda, CrossEntropyAtTheGptTargetShape) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend be(0, false);
  const std::int64_t m = 32 * 1024, v = 50257;
  std::string why;
  if (!enoughMemory(std::size_t(m * v) * 8 + (std::size_t(1) << 30), why)) GTEST_SKIP() << why;
  Tensor logits = be.zeros({m, v}, DType::F16, MemCategory::Activations);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(m));
  for (std::int64_t r = 0; r < m; ++r) labels[std::size_t(r)] = std::int32_t((r * 7919) % v);
  const Tensor lab = be.fromHostInt(labels, {m}, MemCategory::Workspace);
  Tensor probs = be.empty({m, v}, DType::F32, MemCategory::Activations);
  be.fill(probs, gpu_test::kNaN);
  const double loss = be.crossEntropyForward(logits, lab, probs);
  EXPECT_NEAR(loss, std::log(double(v)), 1e-4);
  const double p = 1.0 / double(v);
  EXPECT_NEAR(be.sumOfSquares(probs), double(m) * double(v) * p * p, 1e-6 * double(m) * double(v) * p * p)
      << "probabilities past 2^32 bytes";
  Tensor dlogits = be.empty({m, v}, DType::F16, MemCategory::Gradients);
  be.fill(dlogits, gpu_test::kNaN);
  be.crossEntropyBackward(probs, lab, float(m), dlogits);  // gradScale M: dlogits = p - onehot
  const double off = roundToHalf(float(p)), on = roundToHalf(float(p - 1.0));
  const double want = double(m) * (double(v - 1) * off * off + on * on);
  EXPECT_NEAR(be.sumOfSquares(dlogits), want, 1e-6 * want) << "gradients past 2^31 elements";
}
