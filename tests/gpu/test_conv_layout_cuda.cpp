// Which layout cuDNN really ran (issue 41): channels-last convolutions must reach cuDNN as NHWC,
// not fall back silently to NCHW copies (which still give the right numbers, so every other
// test passes, while the transposes NHWC exists to avoid come back). CudnnConv counts the runs
// it hands cuDNN by layout and the backend counts channels-last calls that took the NCHW copies;
// here every pass of ResNet-20's convolutions, in each dtype the device computes natively, must
// run NHWC when asked for NHWC and NCHW when asked for NCHW, with no fallback.
#include "engine/backend/cuda_backend.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

ConvGeometry geometry(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t rs,
                      std::int64_t stride, std::int64_t pad) {
  ConvGeometry g;
  g.n = n, g.c = c, g.h = g.w = hw, g.k = k, g.r = g.s = rs;
  g.strideH = g.strideW = stride, g.padH = g.padW = pad;
  return g;
}

}  // namespace

TEST(ConvLayoutCuda, ChannelsLastConvolutionsRunNhwcInCudnnWithoutFallback) {
  AMP_SKIP_WITHOUT_GPU();
  auto be = makeBackend("cuda");
  auto* cuda = dynamic_cast<CudaBackend*>(be.get());
  ASSERT_NE(cuda, nullptr);
  if (cuda->preferredImageFormat() != MemoryFormat::ChannelsLast)
    GTEST_SKIP() << "channels-last is switched off here (AMP_CUDA_DISABLE)";
  const ConvGeometry cases[] = {geometry(64, 1, 32, 16, 3, 1, 1), geometry(64, 16, 32, 16, 3, 1, 1),
                                geometry(64, 16, 32, 32, 3, 2, 1), geometry(64, 16, 32, 32, 1, 2, 0),
                                geometry(64, 64, 8, 64, 3, 1, 1)};
  for (const ConvGeometry& g : cases) {
    const Shape xs{g.n, g.c, g.h, g.w}, ws{g.k, g.c, g.r, g.s}, ys{g.n, g.k, g.outH(), g.outW()};
    for (DType d : kFloats) {
      if (!cuda->nativeCompute(d)) continue;  // bf16 before sm_80 runs on fp32 copies
      for (MemoryFormat f : {MemoryFormat::ChannelsLast, MemoryFormat::Contiguous}) {
        const bool nhwc = f == MemoryFormat::ChannelsLast;
        const std::string what = "x " + shapeString(xs) + " w " + shapeString(ws) + " " + name(d) +
                                 (nhwc ? " NHWC" : " NCHW");
        const Tensor x = cuda->zeros(xs, d, MemCategory::Activations, f);
        const Tensor w = cuda->zeros(ws, d, MemCategory::Weights);
        const Tensor dy = cuda->zeros(ys, d, MemCategory::Activations, f);
        Tensor y = cuda->empty(ys, d, MemCategory::Activations, f);
        Tensor dx = cuda->empty(xs, d, MemCategory::Activations, f);
        Tensor dw = cuda->empty(ws, d, MemCategory::Gradients);
        const cuda::ConvLayoutRuns before = cuda->convLayoutRuns();
        const std::int64_t fallbacks = cuda->convNhwcFallbacks();
        cuda->conv2dForward(x, w, nullptr, y, g);
        cuda->conv2dBackwardData(dy, w, dx, g);
        cuda->conv2dBackwardWeights(dy, x, dw, nullptr, g);
        cuda->synchronize("conv layout test");
        const cuda::ConvLayoutRuns after = cuda->convLayoutRuns();
        EXPECT_EQ(cuda->convNhwcFallbacks(), fallbacks) << what << ": a pass fell back to NCHW copies";
        EXPECT_EQ(after.nhwc - before.nhwc, nhwc ? 3 : 0) << what;
        EXPECT_EQ(after.nchw - before.nchw, nhwc ? 0 : 3) << what;
      }
    }
  }
}

// The workspace cap (kernels/cuda/conv_plan_policy.h): with a cap of 0 bytes every plan must
// need no workspace, or planning must refuse in one line naming the cap (never a plan over it).
// Uncapped, at least one pass of these shapes asks for workspace, or the cap was never tested.
TEST(ConvLayoutCuda, TheWorkspaceCapPassesOverAlgorithmsThatNeedMore) {
  AMP_SKIP_WITHOUT_GPU();
  auto be = makeBackend("cuda");
  auto* cuda = dynamic_cast<CudaBackend*>(be.get());
  ASSERT_NE(cuda, nullptr);
  cuda::CudnnConv uncapped(cuda->stream()), capped(cuda->stream());
  capped.setWorkspaceCap(0);
  bool someNeedWorkspace = false;
  for (const ConvGeometry& g : {geometry(64, 16, 32, 16, 3, 1, 1), geometry(64, 64, 8, 64, 3, 1, 1),
                                geometry(64, 16, 32, 32, 3, 2, 1)})
    for (cuda::ConvPass pass : {cuda::ConvPass::Forward, cuda::ConvPass::BackwardData, cuda::ConvPass::BackwardFilter})
      for (bool nhwc : {false, true}) {
        cuda::ConvProblem p;
        p.pass = pass;
        p.geometry = g;
        p.code = 1;  // fp16: tensor-core algorithms, the ones that want workspace
        p.channelsLast = nhwc;
        if (!uncapped.supports(p)) continue;
        someNeedWorkspace |= uncapped.workspaceBytes(p) > 0;
        if (!capped.supports(p)) {
          try {
            capped.workspaceBytes(p);
            ADD_FAILURE() << p.text() << ": refused, yet planned";
          } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("AMP_CUDA_CONV_WORKSPACE_MB"), std::string::npos) << e.what();
          }
          continue;
        }
        EXPECT_EQ(capped.workspaceBytes(p), 0u) << p.text();
      }
  EXPECT_TRUE(someNeedWorkspace) << "no pass asked for workspace uncapped: the cap was not exercised";
  EXPECT_GT(uncapped.workspaceCap(), 0u);
}
