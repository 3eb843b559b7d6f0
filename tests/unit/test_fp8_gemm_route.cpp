// Which quantised GEMMs the CUDA backend sends to cuBLASLt's block-scaled modes (sm_100+) and
// the reason it gives for every other one (kernels/cuda/fp8_gemm_route.h, the host-side logic of
// CudaBackend::quantizedGemmPath), checked without a GPU:
//   - every reason, each case differing from a taken one in one property;
//   - the GEMMs the engine really issues: an fp8 MLP's forward and backward on a CPU backend that
//     records each gemmQuantized call, so that every Linear GEMM's operands are seen blocked
//     along K (the block-scaled path takes all three of them on sm_100) and named on sm_90;
//   - the Linear output's amax (D's amax) that Fp8Context records: the forward GEMM's output
//     amax, the largest of a step, none from a quiet replay.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/amp/autocast.h"
#include "engine/amp/fp8_context.h"
#include "engine/backend/cpu_backend.h"
#include "engine/nn/linear.h"
#include "engine/nn/sequential.h"
#include "kernels/common/float16.h"
#include "kernels/cuda/fp8_gemm_route.h"

using namespace amp;
using namespace amp::cuda;

namespace {

QuantOperandInfo mx(MiniFormat f, bool alongRows) { return {QuantScaling::Mx, f, 32, false, alongRows}; }
QuantOperandInfo fp4(bool alongRows) { return {QuantScaling::Nvfp4, MiniFormat::E2M1, 16, false, alongRows}; }

// Linear's forward layout (x . W^T): a blocked along its rows, b along its rows (b^T's columns).
BlockGemmRoute forward(const QuantOperandInfo& a, const QuantOperandInfo& b, int cc = 10, bool on = true,
                       std::int64_t m = 64, std::int64_t n = 48, std::int64_t k = 96) {
  return routeBlockScaledGemm(a, false, b, true, m, n, k, cc, 0, on);
}

}  // namespace

TEST(Fp8GemmRoute, Mxfp8AndNvfp4BlockedAlongKTakeTheBlockScaledGemmOnSm100) {
  BlockGemmRoute r = forward(mx(MiniFormat::E4M3, false), mx(MiniFormat::E4M3, false));
  EXPECT_TRUE(r.taken()) << r.refusal;
  EXPECT_EQ(r.scaling, Fp8GemmScaling::Mxfp8);
  r = forward(mx(MiniFormat::E5M2, false), mx(MiniFormat::E4M3, false));  // a hybrid gradient
  EXPECT_TRUE(r.taken()) << r.refusal;
  r = forward(fp4(false), fp4(false));
  EXPECT_TRUE(r.taken()) << r.refusal;
  EXPECT_EQ(r.scaling, Fp8GemmScaling::Nvfp4);
  // dgrad (dy . W: W blocked down its columns) and wgrad (dy^T . x: both down their columns).
  EXPECT_TRUE(routeBlockScaledGemm(mx(MiniFormat::E5M2, false), false, mx(MiniFormat::E4M3, true), false, 64, 48, 96,
                                   10, 0, true)
                  .taken());
  EXPECT_TRUE(routeBlockScaledGemm(fp4(true), true, fp4(true), false, 64, 48, 96, 12, 0, true).taken());
}

TEST(Fp8GemmRoute, EveryOtherGemmIsRefusedWithItsReason) {
  const QuantOperandInfo e4 = mx(MiniFormat::E4M3, false);
  EXPECT_EQ(forward(e4, e4, 9).refusal,
            "sm_90 has no block-scaled tensor cores (cuBLASLt's VEC32_UE8M0 / VEC16_UE4M3 need sm_100 or newer)");
  EXPECT_EQ(forward(fp4(false), fp4(false), 8).refusal.rfind("sm_80 has no block-scaled tensor cores", 0), 0u);
  EXPECT_EQ(forward(e4, e4, 10, false).refusal, "AMP_CUDA_DISABLE=fp8-block-gemm");
  // Blocks along m or n: the scale would change inside the sum.
  EXPECT_EQ(forward(mx(MiniFormat::E4M3, true), e4).refusal.rfind("a's blocks run along m or n, not along K", 0), 0u);
  EXPECT_EQ(forward(e4, fp4(true)).refusal.rfind("operands of different scalings (MX x NVFP4)", 0), 0u);
  EXPECT_EQ(forward(fp4(false), fp4(true)).refusal.rfind("b's blocks run along m or n", 0), 0u);
  // An orientation error is named before the device: it is the caller's to fix anywhere.
  EXPECT_EQ(forward(mx(MiniFormat::E4M3, true), e4, 9).refusal.rfind("a's blocks", 0), 0u);
  EXPECT_EQ(forward(mx(MiniFormat::E5M2, false), mx(MiniFormat::E5M2, false)).refusal,
            "MX e5m2 x e5m2 (cuBLASLt's fp8 kernels need an e4m3 operand)");
  EXPECT_NE(forward(mx(MiniFormat::E2M1, false), e4).refusal.find("takes MXFP8"), std::string::npos);
  QuantOperandInfo mx16 = e4;
  mx16.block = 16;
  EXPECT_NE(forward(mx16, e4).refusal.find("VEC32_UE8M0 scales 32"), std::string::npos);
  const QuantOperandInfo blockwise{QuantScaling::Blockwise, MiniFormat::E4M3, 128, false, false};
  const QuantOperandInfo square{QuantScaling::Blockwise, MiniFormat::E4M3, 128, true, false};
  EXPECT_NE(forward(blockwise, square).refusal.find("VEC128_32F / BLK128x128_32F"), std::string::npos);
  EXPECT_EQ(forward({}, e4).refusal.rfind("operands of different scalings (per-tensor x MX)", 0), 0u);
  // Shapes: whole blocks of 32 along K, m and n in 16s.
  EXPECT_NE(forward(e4, e4, 10, true, 64, 48, 80).refusal.find("k of 32"), std::string::npos);
  EXPECT_FALSE(forward(e4, e4, 10, true, 40, 48, 96).taken());
  EXPECT_FALSE(forward(fp4(false), fp4(false), 10, true, 64, 24, 64).taken());
  EXPECT_TRUE(forward(fp4(false), fp4(false), 10, true, 16, 16, 32).taken());
}

namespace {

// A CPU backend that notes every quantised GEMM the layers issue, then runs it.
class RecordingCpu : public CpuBackend {
 public:
  struct Call {
    QuantOperandInfo a, b;
    bool transA, transB;
    std::int64_t m, n, k;
  };
  std::vector<Call> calls;
  void gemmQuantized(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB, Tensor& c,
                     const Tensor* bias) override {
    const auto info = [](const QuantizedTensor& q) {
      return QuantOperandInfo{q.spec.scaling, q.spec.format, q.spec.block, q.spec.square, q.spec.alongRows};
    };
    calls.push_back({info(a), info(b), transA, transB, transA ? a.cols : a.rows, transB ? b.rows : b.cols,
                     transA ? a.rows : a.cols});
    CpuBackend::gemmQuantized(a, transA, b, transB, c, bias);
  }
};

struct Mlp {
  RecordingCpu be;
  Autocast ac;
  Sequential model;
  std::unique_ptr<Fp8Context> f8;
  explicit Mlp(const std::string& recipe) {
    model.add(std::make_unique<Linear>(64, 64));
    model.add(std::make_unique<Linear>(64, 32));
    model.add(std::make_unique<Linear>(32, 32));  // every K a whole number of 32s
    model.initialize(be, 5, DType::F32, MemCategory::MasterWeights);
    Fp8Config c;
    c.recipe = recipe;
    c.keepBf16 = "none";
    f8 = std::make_unique<Fp8Context>(c, 9);
    f8->setModel(model);
  }
  // One training step's forward and backward on a batch of 32: returns the output (bf16).
  Tensor step(std::int64_t n, float scale = 1.f) {
    f8->beginStep(n, true);  // a histogram step: the steps that record D's amax
    LayerContext ctx{be, ac};
    ctx.fp8 = f8.get();
    std::vector<float> xv(32 * 64);
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = scale * std::sin(0.37f * float(i) + float(n));
    const Tensor x = be.fromHost(xv, {32, 64}, DType::F32, MemCategory::Activations);
    Tensor y = model.forward(ctx, x);
    const Tensor dy = be.fromHost(std::vector<float>(32 * 32, 0.01f), {32, 32}, DType::BF16, MemCategory::Activations);
    model.backward(ctx, dy);
    return y;
  }
};

}  // namespace

// The engine quantises each GEMM's operands along that GEMM's reduction (Fp8Context), so the
// forward, input-gradient and weight-gradient GEMMs of every Linear all qualify on sm_100, and on
// sm_90 each falls back naming the device.
TEST(Fp8GemmRoute, EveryLinearGemmOfTheBlockRecipesIsBlockedAlongK) {
  for (const char* recipe : {"mxfp8", "nvfp4"}) {
    Mlp mlp(recipe);
    mlp.step(1);
    // 3 forwards, 3 weight gradients, 2 input gradients (the first layer's input needs none).
    ASSERT_EQ(mlp.be.calls.size(), 8u) << recipe;
    int layouts[2][2] = {{0, 0}, {0, 0}};
    for (const RecordingCpu::Call& c : mlp.be.calls) {
      ++layouts[c.transA][c.transB];
      const BlockGemmRoute r = routeBlockScaledGemm(c.a, c.transA, c.b, c.transB, c.m, c.n, c.k, 10, 0, true);
      EXPECT_TRUE(r.taken()) << recipe << " " << c.m << " x " << c.n << " x " << c.k << ": " << r.refusal;
      EXPECT_EQ(routeBlockScaledGemm(c.a, c.transA, c.b, c.transB, c.m, c.n, c.k, 9, 0, true).refusal.rfind("sm_90 ", 0),
                0u);
    }
    EXPECT_EQ(layouts[0][1], 3) << recipe << ": forward x . W^T";
    EXPECT_EQ(layouts[0][0], 2) << recipe << ": input gradient dy . W";
    EXPECT_EQ(layouts[1][0], 3) << recipe << ": weight gradient dy^T . x";
  }
  Mlp blockwise("blockwise");
  blockwise.step(1);
  for (const RecordingCpu::Call& c : blockwise.be.calls)
    EXPECT_NE(routeBlockScaledGemm(c.a, c.transA, c.b, c.transB, c.m, c.n, c.k, 10, 0, true).refusal.find("VEC128_32F"),
              std::string::npos);
}

// D's amax: the last Linear's output is the model's (bf16, cast once from the fp32 GEMM output),
// so its amax is the recorded amax rounded to bf16 (rounding is monotonic), exactly.
TEST(Fp8OutputAmax, TheForwardGemmsOutputAmaxIsRecordedPerStep) {
  Mlp mlp("delayed");
  EXPECT_TRUE(std::isnan(mlp.f8->outputAmax("2")));
  EXPECT_EQ(mlp.f8->outputAmaxStep("2"), 0);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const std::vector<float> y = mlp.be.toHostFloat(mlp.step(step, float(step)));
    float amax = 0;
    for (float v : y) amax = std::max(amax, std::fabs(v));
    ASSERT_GT(amax, 0.f);
    EXPECT_EQ(roundToBf16(mlp.f8->outputAmax("2")), amax) << "step " << step;
    EXPECT_EQ(mlp.f8->outputAmaxStep("2"), step);
    for (const char* layer : {"0", "1"}) EXPECT_EQ(mlp.f8->outputAmaxStep(layer), step) << layer;
  }
}

TEST(Fp8OutputAmax, AStepKeepsItsLargestAndQuietReplaysRecordNothing) {
  Fp8Config c;
  c.keepBf16 = "none";
  Fp8Context f8(c, 1);
  f8.beginStep(3, false);
  EXPECT_FALSE(f8.recordsOutputs(true));  // not a histogram step: no read back, graphs stay possible
  f8.beginStep(4, true);
  EXPECT_TRUE(f8.recordsOutputs(true));
  f8.recordOutputAmax("fc", 2.f);
  f8.recordOutputAmax("fc", 1.f);  // a second micro-batch
  EXPECT_EQ(f8.outputAmax("fc"), 2.f);
  {
    Fp8Context::Quiet quiet(&f8);
    EXPECT_FALSE(f8.recordsOutputs(true));
    f8.recordOutputAmax("fc", 100.f);
  }
  EXPECT_EQ(f8.outputAmax("fc"), 2.f);
  EXPECT_FALSE(f8.recordsOutputs(false));  // evaluation
  f8.recordOutputAmax("fc", std::nanf(""));
  f8.recordOutputAmax("fc", 3.f);
  EXPECT_TRUE(std::isnan(f8.outputAmax("fc")));  // a non-finite output stays visible for the step
  f8.beginStep(5, true);
  f8.recordOutputAmax("fc", 0.5f);
  EXPECT_EQ(f8.outputAmax("fc"), 0.5f);
  EXPECT_EQ(f8.outputAmaxStep("fc"), 5);
}
