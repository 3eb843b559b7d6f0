// cuDNN's convolution API (deprecated in cuDNN 9 in favour of the graph API, but present and
// supported there; it is what a plain convolution with cached plans needs).
//
// Layouts. NCHW data with a KCRS filter, or (channelsLast) NHWC data with a KRSC filter: one
// layout for all three descriptors. cuDNN's tensor-core kernels work in NHWC; given NCHW
// operands it transposes them around the kernel (the "NCHW-to-NHWC transformations" of the
// legacy API's "Data and Filter Formats"), 22% of a ResNet-20 step's GPU time on an H200. The
// filter is handed over in the data's layout too, as PyTorch does (it makes the weight
// contiguous in the input's memory format before cuDNN sees it), so that cuDNN has nothing left
// to transform; the caller keeps weights KCRS and moves the (small) filter itself.
//
// Numerics. The compute type is always CUDNN_DATA_FLOAT: fp32 data is FLOAT_CONFIG, fp16
// PSEUDO_HALF_CONFIG and bf16 PSEUDO_BFLOAT16_CONFIG, so sums are fp32 for every dtype and each
// output is rounded once to its dtype, as the CPU backend (oneDNN) does. The math type decides
// which kernels may run: fp32 without TF32 -> CUDNN_FMA_MATH (no tensor core ever sees fp32
// data), fp32 with TF32 -> CUDNN_DEFAULT_MATH (TF32 permitted, PyTorch's allow_tf32), 16-bit ->
// CUDNN_TENSOR_OP_MATH. The *_ALLOW_CONVERSION math type, which may narrow operands to reach the
// tensor cores, is never accepted.
//
// Algorithm. cuDNN's heuristics (the _v7 queries) rank every algorithm for the plan's
// descriptors; we take the best-ranked one that (1) reports success, (2) comes with an accepted
// math type, (3) is a GEMM-like or direct algorithm, and (4) whose workspace query succeeds with
// the math type it will run with. (3) keeps every output a plain sum of exact or FMA-rounded
// products, whose error is bounded by the summation bound the tests check (as oneDNN's direct
// convolution on the CPU): FFT and Winograd transforms add errors proportional to whole-tensor
// norms instead, which can swamp small outputs. Deterministic algorithms are preferred (a
// first pass takes only those), so that a rerun with the same seed gives the same weights;
// the non-deterministic GEMM-like ones (atomic adds) are the second choice. If the heuristics
// offer nothing acceptable, the GEMM-like algorithms are tried directly in a fixed order.
#include "kernels/cuda/cudnn_conv.h"

#include <cudnn.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

namespace amp::cuda {

namespace {

cudnnDataType_t dataType(int code) {
  return code == 0 ? CUDNN_DATA_FLOAT : code == 1 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

const char* codeName(int code) { return code == 0 ? "fp32" : code == 1 ? "fp16" : "bf16"; }

const char* passName(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward: return "forward";
    case ConvPass::BackwardData: return "backward data";
    case ConvPass::BackwardFilter: return "backward filter";
  }
  return "?";
}

std::string dims(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  std::string out = "(";  // appended piece by piece: GCC 12 warns falsely on "(" + to_string()
  for (std::int64_t v : {a, b, c, d}) {
    if (out.size() > 1) out += ", ";
    out += std::to_string(v);
  }
  return out + ")";
}

void check(cudnnStatus_t status, const char* what, const ConvProblem& p) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuDNN ") + what + " for conv2d " + p.text() + ": " +
                           cudnnGetErrorString(status));
}

// cuDNN's 4-D descriptors take int sizes, and its legacy kernels index tensors with 32 bits.
void requireInt32Sizes(const ConvProblem& p) {
  const ConvGeometry& g = p.geometry;
  const double limit = double(std::numeric_limits<int>::max());
  const double sizes[] = {double(g.n), double(g.c), double(g.h), double(g.w), double(g.k),
                          double(g.r), double(g.s), double(g.strideH), double(g.strideW),
                          double(g.padH), double(g.padW),
                          double(g.n) * double(g.c) * double(g.h) * double(g.w),
                          double(g.k) * double(g.c) * double(g.r) * double(g.s),
                          double(g.n) * double(g.k) * double(g.outH()) * double(g.outW())};
  for (double v : sizes)
    if (v > limit)
      throw std::invalid_argument("conv2d: " + p.text() +
                                  " is too large for cuDNN (every size and each tensor's element "
                                  "count must fit in 32 bits)");
}

// The math type handed to the heuristics (see the top of the file).
cudnnMathType_t requestedMath(const ConvProblem& p) {
  if (p.code != 0) return CUDNN_TENSOR_OP_MATH;
  return p.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// The math type a heuristic result runs with, or nothing when it is not acceptable. fp32 without
// TF32 always runs with FMA_MATH: a result offered with DEFAULT_MATH is only accepted as an
// algorithm to try under FMA_MATH (the workspace query then says whether cuDNN has that
// algorithm as an FMA kernel), one offered with tensor-op math is refused outright.
std::optional<cudnnMathType_t> runMath(const ConvProblem& p, cudnnMathType_t offered) {
  const bool plain = offered == CUDNN_FMA_MATH || offered == CUDNN_DEFAULT_MATH;
  if (p.code == 0 && !p.tf32) return plain ? std::optional(CUDNN_FMA_MATH) : std::nullopt;
  if (plain || offered == CUDNN_TENSOR_OP_MATH) return offered;
  return std::nullopt;  // CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
}

// The algorithms whose outputs are sums of products (see the top of the file), in the order the
// fallback tries them: deterministic first.
std::vector<int> gemmLikeAlgorithms(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
              CUDNN_CONVOLUTION_FWD_ALGO_DIRECT};
    case ConvPass::BackwardData:
      return {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0};
    case ConvPass::BackwardFilter:
      return {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3};
  }
  return {};
}

// Those whose sums come out in the same order on every call (no atomics across blocks): every
// forward algorithm above, and ALGO_1 of both backward passes.
bool isDeterministic(ConvPass pass, int algo) {
  switch (pass) {
    case ConvPass::Forward: return true;
    case ConvPass::BackwardData: return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    case ConvPass::BackwardFilter: return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  }
  return false;
}

bool isGemmLike(ConvPass pass, int algo) {
  for (int a : gemmLikeAlgorithms(pass))
    if (a == algo) return true;
  return false;
}

// One heuristic result, whatever the pass.
struct Candidate {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  bool deterministic = false;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

template <class Perf>
std::vector<Candidate> candidates(const std::vector<Perf>& perf, int returned) {
  std::vector<Candidate> out;
  for (int i = 0; i < returned && i < static_cast<int>(perf.size()); ++i)
    out.push_back({static_cast<int>(perf[i].algo), perf[i].status,
                   perf[i].determinism == CUDNN_DETERMINISTIC, perf[i].mathType});
  return out;
}

// Seconds on the steady clock: the failed algorithms' holds.
double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string ConvProblem::text() const {
  const ConvGeometry& g = geometry;
  return std::string(passName(pass)) + " x " + dims(g.n, g.c, g.h, g.w) + " w " +
         dims(g.k, g.c, g.r, g.s) + " -> y " + dims(g.n, g.k, g.outH(), g.outW()) + ", stride " +
         std::to_string(g.strideH) + "x" + std::to_string(g.strideW) + ", pad " +
         std::to_string(g.padH) + "x" + std::to_string(g.padW) + ", " + codeName(code) +
         (code == 0 && tf32 ? " (TF32)" : "") + (channelsLast ? ", NHWC" : "");
}

struct CudnnConv::Plan {
  cudnnTensorDescriptor_t x = nullptr;  // (N, C, H, W): x or dx
  cudnnTensorDescriptor_t y = nullptr;  // (N, K, OH, OW): y or dy
  cudnnFilterDescriptor_t w = nullptr;  // (K, C, R, S): w or dw
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t workspace = 0;
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

CudnnConv::CudnnConv(Stream stream) {
  cudnnHandle_t handle = nullptr;
  const cudnnStatus_t created = cudnnCreate(&handle);
  if (created != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuDNN create (library ") + versionText() + "): " +
                             cudnnGetErrorString(created));
  const cudnnStatus_t bound = cudnnSetStream(handle, stream);
  if (bound != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(handle);
    throw std::runtime_error(std::string("cuDNN set stream: ") + cudnnGetErrorString(bound));
  }
  m_handle = handle;
  std::size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
    cudaGetLastError();
    totalBytes = 0;
  }
  m_workspaceCap = convWorkspaceCap(totalBytes, std::getenv("AMP_CUDA_CONV_WORKSPACE_MB"));
}

CudnnConv::~CudnnConv() {
  m_plans.clear();
  if (m_handle) cudnnDestroy(static_cast<cudnnHandle_t>(m_handle));
}

std::string CudnnConv::versionText() {
  const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since 9.0
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

CudnnConv::Key CudnnConv::keyOf(const ConvProblem& p) {
  const ConvGeometry& g = p.geometry;
  return Key{static_cast<int>(p.pass), g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.strideH,
             g.strideW, g.padH, g.padW, p.code, p.code == 0 && p.tf32, p.channelsLast};
}

void CudnnConv::forget(const ConvProblem& p) { m_plans.erase(keyOf(p)); }

CudnnConv::Plan& CudnnConv::planFor(const ConvProblem& p) {
  const ConvGeometry& g = p.geometry;
  const Key key = keyOf(p);
  auto it = m_plans.find(key);
  if (it != m_plans.end()) return *it->second;
  const double now = nowSeconds();
  if (auto refused = m_unsupported.find(key); refused != m_unsupported.end()) {
    if (now < refused->second.second) throw std::runtime_error(refused->second.first);
    m_unsupported.erase(refused);  // its held-back algorithms may be tried again
  }

  if (!g.valid()) throw std::invalid_argument("conv2d: invalid geometry " + p.text());
  if (p.code < 0 || p.code > 2) throw std::invalid_argument("conv2d: unknown dtype code");
  requireInt32Sizes(p);
  const auto h = static_cast<cudnnHandle_t>(m_handle);
  const cudnnDataType_t type = dataType(p.code);
  auto plan = std::make_unique<Plan>();
  check(cudnnCreateTensorDescriptor(&plan->x), "tensor descriptor", p);
  check(cudnnCreateTensorDescriptor(&plan->y), "tensor descriptor", p);
  check(cudnnCreateFilterDescriptor(&plan->w), "filter descriptor", p);
  check(cudnnCreateConvolutionDescriptor(&plan->conv), "convolution descriptor", p);
  // Sizes are always given as (N, C, H, W) / (K, C, R, S); the format says how they lie.
  const cudnnTensorFormat_t layout = p.channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  check(cudnnSetTensor4dDescriptor(plan->x, layout, type, int(g.n), int(g.c), int(g.h), int(g.w)),
        "input descriptor", p);
  check(cudnnSetTensor4dDescriptor(plan->y, layout, type, int(g.n), int(g.k), int(g.outH()),
                                   int(g.outW())),
        "output descriptor", p);
  check(cudnnSetFilter4dDescriptor(plan->w, type, layout, int(g.k), int(g.c), int(g.r), int(g.s)),
        "filter descriptor", p);
  // Cross-correlation (no kernel flip) is what PyTorch and oneDNN call convolution.
  check(cudnnSetConvolution2dDescriptor(plan->conv, int(g.padH), int(g.padW), int(g.strideH),
                                        int(g.strideW), 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "convolution descriptor", p);
  check(cudnnSetConvolutionMathType(plan->conv, requestedMath(p)), "math type", p);
  int on = 0, oc = 0, oh = 0, ow = 0;
  check(cudnnGetConvolution2dForwardOutputDim(plan->conv, plan->x, plan->w, &on, &oc, &oh, &ow),
        "output size", p);
  if (on != g.n || oc != g.k || oh != g.outH() || ow != g.outW())
    throw std::logic_error("cuDNN computes output " + dims(on, oc, oh, ow) + " for conv2d " +
                           p.text());

  // The ranked heuristic results, and the workspace query that validates (algorithm, math).
  std::vector<Candidate> ranked;
  auto workspaceFor = [&](int algo, std::size_t* bytes) -> cudnnStatus_t {
    switch (p.pass) {
      case ConvPass::Forward:
        return cudnnGetConvolutionForwardWorkspaceSize(h, plan->x, plan->w, plan->conv, plan->y,
                                                       cudnnConvolutionFwdAlgo_t(algo), bytes);
      case ConvPass::BackwardData:
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, plan->w, plan->y, plan->conv, plan->x, cudnnConvolutionBwdDataAlgo_t(algo), bytes);
      case ConvPass::BackwardFilter:
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, plan->x, plan->y, plan->conv, plan->w, cudnnConvolutionBwdFilterAlgo_t(algo),
            bytes);
    }
    return CUDNN_STATUS_BAD_PARAM;
  };
  int count = 0, returned = 0;
  switch (p.pass) {
    case ConvPass::Forward: {
      check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count), "algorithm count", p);
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::size_t(count > 0 ? count : 1));
      check(cudnnGetConvolutionForwardAlgorithm_v7(h, plan->x, plan->w, plan->conv, plan->y,
                                                   int(perf.size()), &returned, perf.data()),
            "heuristics", p);
      ranked = candidates(perf, returned);
      break;
    }
    case ConvPass::BackwardData: {
      check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count), "algorithm count", p);
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::size_t(count > 0 ? count : 1));
      check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan->w, plan->y, plan->conv, plan->x,
                                                        int(perf.size()), &returned, perf.data()),
            "heuristics", p);
      ranked = candidates(perf, returned);
      break;
    }
    case ConvPass::BackwardFilter: {
      check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count), "algorithm count", p);
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(std::size_t(count > 0 ? count : 1));
      check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, plan->x, plan->y, plan->conv,
                                                          plan->w, int(perf.size()), &returned,
                                                          perf.data()),
            "heuristics", p);
      ranked = candidates(perf, returned);
      break;
    }
  }

  // Sets the descriptor's math type and asks for the workspace: true when cuDNN accepts the
  // pair. The descriptor is left with the last math type tried; the winner's is set below.
  auto accept = [&](int algo, cudnnMathType_t math) {
    std::size_t bytes = 0;
    if (m_failed.refused(key, algo, now)) return false;  // it failed to run a moment ago
    if (cudnnSetConvolutionMathType(plan->conv, math) != CUDNN_STATUS_SUCCESS) return false;
    if (workspaceFor(algo, &bytes) != CUDNN_STATUS_SUCCESS) return false;
    if (bytes > m_workspaceCap) return false;  // the next acceptable one instead
    plan->algo = algo;
    plan->math = math;
    plan->workspace = bytes;
    return true;
  };
  auto fromHeuristics = [&](bool deterministicOnly) {
    for (const Candidate& c : ranked) {
      if (c.status != CUDNN_STATUS_SUCCESS || !isGemmLike(p.pass, c.algo)) continue;
      if (deterministicOnly && !c.deterministic) continue;
      const std::optional<cudnnMathType_t> math = runMath(p, c.math);
      if (math && accept(c.algo, *math)) return true;
    }
    return false;
  };
  auto fixedOrder = [&](bool deterministicOnly) {
    for (int algo : gemmLikeAlgorithms(p.pass))
      if ((!deterministicOnly || isDeterministic(p.pass, algo)) && accept(algo, requestedMath(p)))
        return true;
    return false;
  };
  // Reproducible first: the same seed must give the same weights, so a deterministic algorithm
  // the heuristics did not offer beats a non-deterministic one they did.
  const bool chosen =
      fromHeuristics(true) || fixedOrder(true) || fromHeuristics(false) || fixedOrder(false);
  if (!chosen)
    throw std::runtime_error("cuDNN " + versionText() +
                             " offers no GEMM-like algorithm with fp32 accumulation and at most " +
                             std::to_string(m_workspaceCap >> 20) +
                             " MiB of workspace (AMP_CUDA_CONV_WORKSPACE_MB) for conv2d " + p.text() +
                             (m_failed.nextRelease(key, now) < std::numeric_limits<double>::infinity()
                                  ? " that has not failed to run in the last minute"
                                  : ""));
  check(cudnnSetConvolutionMathType(plan->conv, plan->math), "math type", p);
  return *m_plans.emplace(key, std::move(plan)).first->second;
}

std::size_t CudnnConv::workspaceBytes(const ConvProblem& problem) {
  return planFor(problem).workspace;
}

bool CudnnConv::supports(const ConvProblem& problem) {
  const Key key = keyOf(problem);
  if (m_plans.count(key)) return true;
  if (m_unsupported.count(key)) return false;
  try {
    planFor(problem);
    return true;
  } catch (const std::runtime_error& e) {  // cuDNN's refusals; invalid problems still throw
    // For ever, unless an algorithm held back after a failure was missing: until it may be
    // tried again.
    m_unsupported[key] = {e.what(), m_failed.nextRelease(key, nowSeconds())};
    return false;
  }
}

void CudnnConv::run(const ConvProblem& p, const void* in0, const void* in1, void* out,
                    void* workspace, std::size_t workspaceBytes) {
  Plan& plan = planFor(p);
  if (workspaceBytes < plan.workspace)
    throw std::logic_error("conv2d " + p.text() + ": workspace of " +
                           std::to_string(workspaceBytes) + " bytes, cuDNN needs " +
                           std::to_string(plan.workspace));
  const auto h = static_cast<cudnnHandle_t>(m_handle);
  // alpha and beta are floats for fp32 compute, whatever the data type.
  const float one = 1.f, zero = 0.f;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  switch (p.pass) {
    case ConvPass::Forward:
      status = cudnnConvolutionForward(h, &one, plan.x, in0, plan.w, in1, plan.conv,
                                       cudnnConvolutionFwdAlgo_t(plan.algo), workspace,
                                       workspaceBytes, &zero, plan.y, out);
      break;
    case ConvPass::BackwardData:
      status = cudnnConvolutionBackwardData(h, &one, plan.w, in1, plan.y, in0, plan.conv,
                                            cudnnConvolutionBwdDataAlgo_t(plan.algo), workspace,
                                            workspaceBytes, &zero, plan.x, out);
      break;
    case ConvPass::BackwardFilter:
      status = cudnnConvolutionBackwardFilter(h, &one, plan.x, in0, plan.y, in1, plan.conv,
                                              cudnnConvolutionBwdFilterAlgo_t(plan.algo),
                                              workspace, workspaceBytes, &zero, plan.w, out);
      break;
  }
  if (status != CUDNN_STATUS_SUCCESS) {
    const std::string what = "run (algorithm " + std::to_string(plan.algo) + ", math type " +
                             std::to_string(int(plan.math)) + ")";
    // Held back for this problem a while, and the plan forgotten: the next plan takes another
    // algorithm in the same layout (conv_plan_policy.h), the caller's NCHW copies only when none
    // is left.
    m_failed.failed(keyOf(p), plan.algo, nowSeconds());
    forget(p);
    throw ConvRunFailed(std::string("cuDNN ") + what + " for conv2d " + p.text() + ": " +
                        cudnnGetErrorString(status));
  }
  ++(p.channelsLast ? m_runs.nhwc : m_runs.nchw);
}

}  // namespace amp::cuda
