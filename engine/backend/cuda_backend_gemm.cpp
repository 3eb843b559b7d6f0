// CUDA backend: GEMMs through cuBLASLt (one handle and workspace per backend) with the bias
// fused where cuBLASLt's epilogue takes it, the bias gradient, and GEMM time from CUDA events.
#include <cuda_runtime.h>

#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_fast_paths.h"
#include "engine/backend/cuda_error.h"

namespace amp {

using cudabk::floatCode;

cuda::GemmShape CudaBackend::gemmShape(std::int64_t m, std::int64_t n, std::int64_t k, bool transA,
                                       bool transB, const Tensor& a, const Tensor& c,
                                       const char* op) const {
  cuda::GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.transA = transA;
  s.transB = transB;
  s.inCode = floatCode(a, op);
  s.outCode = floatCode(c, op);
  s.tf32 = m_tf32;
  s.reducedPrecisionReduction = m_reducedPrecisionReduction;
  return s;
}

void CudaBackend::gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
                       const Tensor* bias) {
  useDevice();
  const checks::GemmDims d = checks::gemm(a, transA, b, transB, c, bias);
  cuda::GemmShape s = gemmShape(d.m, d.n, d.k, transA, transB, a, c, "gemm");
  // The epilogue takes a bias of the output's dtype; a 16-bit bias on an fp32 output is added
  // by our kernel afterwards (the same single fp32 add).
  s.withBias = bias && bias->dtype() == c.dtype();

  if (m_eventsUsed == m_events.size()) {
    cudaEvent_t start, stop;
    checkCuda(cudaEventCreate(&start), "gemm timing event");
    checkCuda(cudaEventCreate(&stop), "gemm timing event");
    m_events.push_back({start, stop});
  }
  const EventPair& ev = m_events[m_eventsUsed++];
  recordEvent(ev.start, "gemm timing");  // a node of the graph when capturing
  try {
    m_gemm->run(s, a.rawData(), b.rawData(), s.withBias ? bias->rawData() : nullptr, c.rawData(),
                m_stream);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " [" + cudabk::shapes({&a, &b, &c}) + "]");
  }
  if (bias && !s.withBias) {
    cuda::launchBiasAdd(floatCode(*bias, "gemm bias"), bias->rawData(), c.data<float>(), s.m, s.n,
                        m_stream);
    checkLaunch("gemm bias", cudabk::shapes({bias, &c}));
  }
  recordEvent(ev.stop, "gemm timing");  // a node of the graph when capturing
  m_gemmCounters.flops += 2.0 * double(s.m) * double(s.n) * double(s.k);
  ++m_gemmCounters.calls;
}

GemmCounters CudaBackend::gemmCounters() const {
  useDevice();
  // Summed once the events have completed; callers read the counters after the step's
  // synchronisation, so this does not stall (if it must wait, the wait is for the GEMMs).
  GemmCounters out = m_gemmCounters;
  double ms = 0;
  for (std::size_t i = 0; i < m_eventsUsed; ++i) {
    float t = 0;
    auto stop = static_cast<cudaEvent_t>(m_events[i].stop);
    if (cudaEventSynchronize(stop) == cudaSuccess &&
        cudaEventElapsedTime(&t, static_cast<cudaEvent_t>(m_events[i].start), stop) == cudaSuccess)
      ms += t;
    else
      cudaGetLastError();
  }
  out.seconds = ms * 1e-3;
  return out;
}

void CudaBackend::resetGemmCounters() {
  m_gemmCounters = {};
  m_eventsUsed = 0;
}

void CudaBackend::biasGrad(const Tensor& dy, Tensor& db) {
  useDevice();
  const std::int64_t n = db.numel();
  if (dy.rank() != 2 || dy.dim(1) != n)
    throw std::invalid_argument("biasGrad: dy " + shapeString(dy.shape()) + " vs bias " +
                                shapeString(db.shape()));
  // Few columns over many rows: the two-pass form (bias_grad.cu), the same order and bits.
  const std::size_t partialFloats =
      cudabk::fastPathEnabled("wide-bias-grad") ? cuda::biasGradPartialFloats(dy.dim(0), n) : 0;
  const Tensor partials = partialFloats > 0 ? empty({static_cast<std::int64_t>(partialFloats)}, DType::F32,
                                                    MemCategory::Workspace)
                                            : Tensor();
  cuda::launchBiasGrad(floatCode(dy, "biasGrad"), dy.rawData(), dy.dim(0), n,
                       floatCode(db, "biasGrad"), db.rawData(), m_stream,
                       partialFloats > 0 ? static_cast<float*>(partials.rawData()) : nullptr);
  checkLaunch("bias grad", cudabk::shapes({&dy, &db}));
}

}  // namespace amp
