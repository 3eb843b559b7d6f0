// CUDA backend: convolutions (groups 1, dilation 1) through cuDNN (kernels/cuda/cudnn_conv),
// with the CPU backend's contract and refusals (cpu_backend_conv.cpp): inputs of one dtype,
// outputs of that dtype or fp32, sums in fp32.
//
// - Layouts: the activations (x, y, dy, dx) of one call share a format, NCHW or channels-last
//   (NHWC), and cuDNN gets them as they lie; weights are always KCRS. A channels-last call hands
//   cuDNN the filter in KRSC (a small transpose into workspace; the filter gradient comes back
//   KRSC and is transposed into dw), so no descriptor is in another layout and cuDNN transforms
//   nothing. Should cuDNN offer no algorithm in NHWC, the call runs on NCHW copies instead.
//
// - Every operand in one dtype cuDNN runs here: one cuDNN call in that dtype (fp32 with TF32
//   only when backend.tf32 asks for it). The bias is then added by our kernel, as PyTorch adds
//   it after cuDNN's convolution: for a 16-bit output that is a second rounding (the convolution
//   is rounded to 16 bits, then the sum with the bias).
// - Otherwise (an fp32 output from 16-bit inputs, or bf16 on a GPU without bf16 tensor cores):
//   the 16-bit inputs are widened into fp32 workspace copies (exact) and the convolution runs in
//   fp32 with CUDNN_FMA_MATH, TF32 off whatever backend.tf32 says. Products of widened 16-bit
//   values are exact in fp32 (11 + 11 significant bits fit in 24), so this is exactly the
//   contract "products and sums in fp32, one rounding to the output's dtype", computed as the
//   CPU's reference computes it (TF32 tensor cores would multiply these values exactly too, but
//   then the result would hang on how cuDNN converts to TF32). cuDNN has no configuration with
//   16-bit inputs and an fp32 output, so the copies are the price of one rounding.
// - The bias gradient is our kernel on the original dy (any dtype in, any dtype out, summed in a
//   fixed order), so dw and dbias may differ in dtype without a detour.
// Workspaces (cuDNN's and the fp32 copies) come from this backend's allocator as
// MemCategory::Workspace tensors freed when the call returns; all work is on one stream, so a
// freed block reused by the next call is never still in use. Convolution time and flops are
// counted in the GEMM counters, as the CPU backend counts them.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"
#include "kernels/cuda/channel_bias_kernels.h"

namespace amp {

using checks::checkedGeometry;
using checks::convInputDtype;
using checks::requireNumel;
using cudabk::floatCode;

namespace {


// t itself when it is fp32, else an exact fp32 copy in workspace (in t's format).
Tensor widened(CudaBackend& be, const Tensor& t) {
  if (t.dtype() == DType::F32) return t;
  Tensor wide = be.empty(t.shape(), DType::F32, MemCategory::Workspace, t.format());
  be.castInto(t, wide);
  return wide;
}


}  // namespace

void CudaBackend::timeInGemmCounters(double flops, const std::function<void()>& work) {
  if (m_eventsUsed == m_events.size()) {
    cudaEvent_t start, stop;
    checkCuda(cudaEventCreate(&start), "conv timing event");
    const cudaError_t made = cudaEventCreate(&stop);
    if (made != cudaSuccess) cudaEventDestroy(start);
    checkCuda(made, "conv timing event");
    m_events.push_back({start, stop});
  }
  const EventPair& ev = m_events[m_eventsUsed++];
  try {
    recordEvent(ev.start, "conv timing");  // a node of the graph when capturing
    work();
    recordEvent(ev.stop, "conv timing");  // a node of the graph when capturing
  } catch (...) {
    --m_eventsUsed;  // a pair without its stop must not be summed
    throw;
  }
  m_gemmCounters.flops += flops;
  ++m_gemmCounters.calls;
}

void CudaBackend::runCudnn(const cuda::ConvProblem& problem, const Tensor& in0, const Tensor& in1,
                           Tensor& out) {
  const bool filterOut = problem.pass == cuda::ConvPass::BackwardFilter;
  // An algorithm that planned but failed to run is held back for this problem a while
  // (kernels/cuda/conv_plan_policy.h) and the call plans again: another algorithm in the same
  // layout, or (channels-last) the NCHW copies once none is left. Bounded: each failure holds
  // one more algorithm back, and cuDNN has a handful per pass.
  constexpr int kAttempts = 8;
  if (problem.channelsLast) {
    const MemoryFormat nchw = MemoryFormat::Contiguous, nhwc = MemoryFormat::ChannelsLast;
    for (int attempt = 0; attempt < kAttempts && m_conv->supports(problem); ++attempt) {
      try {
        if (filterOut) {  // dw comes out KRSC: into workspace, then transposed into place
          Tensor krsc = empty(out.shape(), out.dtype(), MemCategory::Workspace, nhwc);
          runCudnnAsLaidOut(problem, in0, in1, krsc);
          convertFormatInto(krsc, out);
          return;
        }
        return runCudnnAsLaidOut(problem, in0, toFormat(in1, nhwc, MemCategory::Workspace), out);  // in1: the filter
      } catch (const cuda::ConvRunFailed&) {
        cudaGetLastError();
      }
    }
    // No NHWC algorithm for this one (now): the same convolution on NCHW copies.
    ++m_convNhwcFallbacks;
    cuda::ConvProblem fallback = problem;
    fallback.channelsLast = false;
    Tensor result = out.channelsLast()
                        ? empty(out.shape(), out.dtype(), MemCategory::Workspace, nchw)
                        : out;
    runCudnn(fallback, toFormat(in0, nchw, MemCategory::Workspace), toFormat(in1, nchw, MemCategory::Workspace), result);
    if (result.rawData() != out.rawData()) convertFormatInto(result, out);
    return;
  }
  for (int attempt = 1;; ++attempt) {
    try {
      return runCudnnAsLaidOut(problem, in0, in1, out);
    } catch (const cuda::ConvRunFailed&) {
      cudaGetLastError();
      if (attempt == kAttempts || !m_conv->supports(problem)) throw;
    }
  }
}

void CudaBackend::runCudnnAsLaidOut(const cuda::ConvProblem& problem, const Tensor& in0,
                                    const Tensor& in1, Tensor& out) {
  const std::size_t bytes = m_conv->workspaceBytes(problem);
  const Tensor workspace =
      bytes > 0 ? empty({static_cast<std::int64_t>(bytes)}, DType::U8, MemCategory::Workspace)
                : Tensor();
  m_conv->run(problem, in0.rawData(), in1.rawData(), out.rawData(), workspace.rawData(), bytes);
}

void CudaBackend::runConv(cuda::ConvPass pass, const Conv2dGeometry& g, const Tensor& in0,
                          const Tensor& in1, Tensor& out, const Tensor* bias) {
  const DType in = in0.dtype();
  // cuDNN's bf16 convolutions need bf16 tensor cores (sm_80 and up).
  const bool runsHere = in != DType::BF16 || m_ccMajor >= 8;
  cuda::ConvProblem problem;
  problem.pass = pass;
  problem.geometry = g;
  // The activations' format (checked to agree by the callers); weights are always KCRS.
  problem.channelsLast = (pass == cuda::ConvPass::BackwardFilter ? in0 : out).channelsLast();
  const bool nhwc = problem.channelsLast;
  const std::int64_t hw = g.outH() * g.outW();
  if (out.dtype() == in && runsHere) {
    problem.code = floatCode(in0, "conv2d");
    problem.tf32 = m_tf32;
    runCudnn(problem, in0, in1, out);
    if (bias) {
      cuda::launchChannelBiasAdd(floatCode(out, "conv2d"), out.rawData(),
                                 floatCode(*bias, "conv2d bias"), bias->rawData(), g.n, g.k, hw,
                                 nhwc, m_stream);
      checkLaunch("conv2d bias", cudabk::shapes({bias, &out}));
    }
    return;
  }
  // fp32 copies, an fp32 result (out itself when it is fp32), the bias added in fp32 and one
  // rounding into out.
  const Tensor a = widened(*this, in0), b = widened(*this, in1);
  Tensor result = out.dtype() == DType::F32
                      ? out
                      : empty(out.shape(), DType::F32, MemCategory::Workspace, out.format());
  problem.code = 0;
  problem.tf32 = false;
  runCudnn(problem, a, b, result);
  if (bias) {
    cuda::launchChannelBiasAdd(0, result.rawData(), floatCode(*bias, "conv2d bias"),
                               bias->rawData(), g.n, g.k, hw, nhwc, m_stream);
    checkLaunch("conv2d bias", cudabk::shapes({bias, &result}));
  }
  if (result.rawData() != out.rawData()) castInto(result, out);
}

void CudaBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                                const Conv2dGeometry& g) {
  useDevice();
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(y, {s.n, s.k, s.outH(), s.outW()}, "output");
  if (bias) requireNumel(*bias, {s.k}, "bias");
  convInputDtype({&x, &w, bias}, {&y});
  checks::requireContiguous(w, "conv2d", "weight");
  checks::sameFormat({&x, &y}, "conv2d");
  timeInGemmCounters(s.flops(), [&] { runConv(cuda::ConvPass::Forward, s, x, w, y, bias); });
}

void CudaBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx,
                                     const Conv2dGeometry& g) {
  useDevice();
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(dx, {s.n, s.c, s.h, s.w}, "input gradient");
  convInputDtype({&dy, &w}, {&dx});
  checks::requireContiguous(w, "conv2d backward", "weight");
  checks::sameFormat({&dy, &dx}, "conv2d backward");
  timeInGemmCounters(s.flops(), [&] {
    runConv(cuda::ConvPass::BackwardData, s, dy, w, dx, nullptr);
  });
}

void CudaBackend::conv2dBackwardWeights(const Tensor& dy, const Tensor& x, Tensor& dw,
                                        Tensor* dbias, const Conv2dGeometry& g) {
  useDevice();
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(dw, {s.k, s.c, s.r, s.s}, "weight gradient");
  if (dbias) requireNumel(*dbias, {s.k}, "bias gradient");
  convInputDtype({&dy, &x}, {&dw, dbias});
  checks::requireContiguous(dw, "conv2d backward", "weight gradient");
  checks::sameFormat({&dy, &x}, "conv2d backward");
  timeInGemmCounters(s.flops(), [&] {
    // cuDNN's backward filter takes x first, dy second (cudnn_conv.h).
    runConv(cuda::ConvPass::BackwardFilter, s, x, dy, dw, nullptr);
    if (dbias) {
      cuda::launchChannelBiasGrad(floatCode(dy, "conv2d"), dy.rawData(), s.n, s.k,
                                  s.outH() * s.outW(), dy.channelsLast(),
                                  floatCode(*dbias, "conv2d"), dbias->rawData(), m_stream);
      checkLaunch("conv2d bias gradient", cudabk::shapes({&dy, dbias}));
    }
  });
}

}  // namespace amp
