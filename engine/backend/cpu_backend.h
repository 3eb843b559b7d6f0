// The CPU backend: oneDNN GEMMs (fp32; bf16 native via AVX512-BF16/AMX where present), fp16
// emulated exactly (fp32 math on fp16-rounded inputs, output rounded to fp16), OpenMP loops.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/block_cache.h"
#include "kernels/cpu/float_io.h"

namespace amp {

// Not final: tests derive from it to stand in for a device backend's protocols (step graphs).
class CpuBackend : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  std::string description() const override;
  std::string computePath(DType dtype) const override;
  bool nativeCompute(DType dtype) const override;

  void* allocateBytes(std::size_t bytes) override;
  void freeBytes(void* p, std::size_t bytes) override;
  MemoryTracker& memory() override { return m_memory; }

  void uploadFloat(Tensor& dst, std::span<const float> src) override;
  void uploadInt(Tensor& dst, std::span<const std::int32_t> src) override;
  std::vector<float> toHostFloat(const Tensor& t) override;
  std::vector<std::int32_t> toHostInt(const Tensor& t) override;
  std::vector<std::uint8_t> toHostBytes(const Tensor& t) override;
  void uploadBytes(Tensor& dst, std::span<const std::uint8_t> src) override;

  // Memory formats (cpu_backend_layout.cpp). Every op accepts channels-last operands: image ops
  // transpose them to NCHW scratch, run the NCHW code and transpose their outputs back, so
  // results are bit for bit those of contiguous operands. Off by default (oneDNN gains nothing
  // from it here). On, the CPU prefers channels-last images as the CUDA backend does, which
  // runs the engine's channels-last plumbing (layers, autocast, the host boundary) exactly on
  // machines without a GPU: tests compare whole training runs with it on and off, bit for bit.
  MemoryFormat preferredImageFormat() const override {
    return m_channelsLast ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  }
  void setChannelsLastEmulation(bool on) { m_channelsLast = on; }
  void convertFormatInto(const Tensor& src, Tensor& dst) override;

  void fill(Tensor& t, float value) override;
  void castInto(const Tensor& src, Tensor& dst) override;
  void copyInto(const Tensor& src, Tensor& dst) override;
  void gatherRows(const Tensor& src, std::span<const std::int64_t> rows, Tensor& dst) override;
  void accumulate(Tensor& dst, const Tensor& src) override;
  void scaleInPlace(Tensor& t, float factor) override;
  void roundThrough(Tensor& t, DType through) override;
  void activationForward(Activation a, const Tensor& x, Tensor& y) override;
  void activationBackward(Activation a, const Tensor& x, const Tensor& y, const Tensor& dy,
                          Tensor& dx) override;
  void dropoutForward(const Tensor& x, Tensor& mask, Tensor& y, float p,
                      std::uint64_t seed) override;
  void dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx, float p) override;

  void gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
            const Tensor* bias) override;
  void biasGrad(const Tensor& dy, Tensor& db) override;
  // fp8 operands (cpu_backend_quantized.cpp): the host reference on the tensors in place.
  float amax(const Tensor& x) override;
  void quantize(const Tensor& x, std::int64_t cols, const QuantSpec& spec, QuantizedTensor& q, MemCategory cat,
                QuantStats* stats) override;
  void dequantize(const QuantizedTensor& q, Tensor& out) override;

  void conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                     const Conv2dGeometry& g) override;
  void conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx,
                          const Conv2dGeometry& g) override;
  void conv2dBackwardWeights(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias,
                             const Conv2dGeometry& g) override;
  void conv2dBackward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor* dx, Tensor& dw,
                      Tensor* dbias, const Conv2dGeometry& g) override;
  void maxPool2dForward(const Tensor& x, Tensor& y, Tensor& argmax,
                        const Pool2dGeometry& g) override;
  void maxPool2dBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx,
                         const Pool2dGeometry& g) override;
  void batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                             Tensor& runningMean, Tensor& runningVar, float momentum, float eps,
                             Tensor& y, Tensor& saveMean, Tensor& saveInvStd) override;
  void batchNormReluForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 Tensor& runningMean, Tensor& runningVar, float momentum, float eps,
                                 const Tensor* residual, Tensor& y, Tensor& saveMean,
                                 Tensor& saveInvStd) override;
  void batchNormForwardEval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                            const Tensor& runningMean, const Tensor& runningVar, float eps,
                            Tensor& y) override;
  void batchNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                         const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta) override;

  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void globalAvgPoolForward(const Tensor& x, Tensor& y) override;
  void globalAvgPoolBackward(const Tensor& dy, Tensor& dx) override;

  void batchNormReluBackward(const Tensor& dy, const Tensor& reluOut, const Tensor& x,
                             const Tensor& gamma, const Tensor& saveMean, const Tensor& saveInvStd,
                             Tensor& dx, Tensor& dgamma, Tensor& dbeta) override;
  double crossEntropyForward(const Tensor& logits, const Tensor& labels, Tensor& probs) override;
  void crossEntropyBackward(const Tensor& probs, const Tensor& labels, float gradScale,
                            Tensor& dlogits) override;
  double mseForward(const Tensor& pred, const Tensor& target) override;
  void mseBackward(const Tensor& pred, const Tensor& target, float gradScale,
                   Tensor& dpred) override;
  std::int64_t countCorrect(const Tensor& logits, const Tensor& labels) override;

  UnscaleResult unscaleAndCheck(std::span<Tensor* const> grads, float invScale) override;
  std::int64_t countNonFinite(const Tensor& t) override;
  double sumOfSquares(const Tensor& t) override;
  UpdateResult sgdStep(Tensor& param, const Tensor& grad, Tensor* momentumBuf,
                       const SgdParams& p) override;
  UpdateResult adamStep(Tensor& param, const Tensor& grad, Tensor& expAvg, Tensor& expAvgSq,
                        const AdamParams& p) override;

  ExponentHistogram histogram(const Tensor& t, double multiplier) override;
  void setElement(Tensor& t, std::int64_t index, float value) override;
  GemmCounters gemmCounters() const override { return m_gemm; }
  void resetGemmCounters() override { m_gemm = {}; }

  // Off by default: the CPU gains nothing from deferring (the base class's fused forms are a
  // roundThrough and the op). On, the engine's deferred-rounding bookkeeping (which gradients
  // await their rounding, who settles them) runs here exactly as on a GPU, so the trainer's
  // tests check it on machines without one.
  bool defersGradRounding() const override { return m_defersGradRounding; }
  void setDefersGradRounding(bool on) { m_defersGradRounding = on; }
  // Off by default (a cast on the CPU costs what the copy's write would); tests turn it on to
  // check that the CUDA backend's optimizer-written weight copies change no number.
  bool keepsWeightCopies() const override { return m_keepsWeightCopies; }
  float* hostFloats(Tensor& t) override { return t.dtype() == DType::F32 ? t.data<float>() : nullptr; }
  void setKeepsWeightCopies(bool on) { m_keepsWeightCopies = on; }

  // Transformer ops (cpu_backend_transformer.cpp).
  void embeddingForward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                        std::int64_t T, Tensor& y) override;
  void embeddingBackward(const Tensor& dy, const Tensor& tokens, std::int64_t T, Tensor& dwte,
                         Tensor& dwpe) override;
  void layerNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                        Tensor& y, Tensor& mean, Tensor& rstd) override;
  void addLayerNormForward(const Tensor& a, const Tensor& b, const Tensor& gamma,
                           const Tensor& beta, float eps, Tensor& sum, Tensor& y, Tensor& mean,
                           Tensor& rstd) override;
  void layerNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                         const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dgamma,
                         Tensor& dbeta) override;
  void causalSoftmaxForward(const Tensor& scores, float scale, Tensor& probs) override;
  void causalSoftmaxBackward(const Tensor& probs, const Tensor& dprobs, float scale,
                             Tensor& dscores) override;
  void splitHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) override;
  void mergeHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) override;
  void gemmBatched(const Tensor& a, bool transA, const Tensor& b, bool transB,
                   Tensor& c) override;
  void causalAttentionForward(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                              Tensor& probs, Tensor* pv, Tensor& y) override;
  void causalAttentionBackward(const Tensor& dy, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& probs, const Tensor& p, float scale, Tensor& dq,
                               Tensor& dk, Tensor& dv) override;

  // Off (0 or 1) by default. With `parts` >= 2, every fp32 GEMM with K >= parts runs as that many
  // GEMMs over consecutive slices of K whose results are added in order (the split-K order a GPU
  // library may choose): the same products summed in another order. How far a run moves under
  // it is the yardstick for how far a GPU run, whose library sums in its own order, may stray
  // from the CPU's (tests/gpu/test_trainer_cuda.cpp).
  void setGemmSplitK(int parts) { m_gemmSplitK = parts; }

 private:
  bool m_channelsLast = false;
  bool m_defersGradRounding = false;
  bool m_keepsWeightCopies = false;
  int m_gemmSplitK = 0;
  void gemmSplitK(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
                  const Tensor* bias);
  MemoryTracker m_memory;
  GemmCounters m_gemm;
  // Freed blocks kept for reuse (fresh multi-MB blocks would be mmap'ed and page-faulted anew
  // each step), up to 1 GiB.
  BlockCache m_blocks{std::size_t{1} << 30};
};

// Shared helpers of the CPU backend's translation units.
namespace cpu {
inline int floatCode(const Tensor& t) {
  if (!(t.dtype() == DType::F32 || t.dtype() == DType::F16 || t.dtype() == DType::BF16))
    throw std::invalid_argument("expected a floating-point tensor, got " +
                                std::string(dtypeName(t.dtype())));
  return static_cast<int>(t.dtype());
}
void requireSameShape(const Tensor& a, const Tensor& b, const char* op);
// Scratch of the oneDNN wrappers (blocked-layout copies, fp32 copies of emulated 16-bit
// operands) counts as workspace while a call runs, as a temporary tensor would: the memory chart
// then shows what emulation and layout reorders really cost.
class ScratchAccount {
 public:
  ScratchAccount(MemoryTracker& tracker, std::size_t bytes)
      : m_tracker(tracker), m_bytes(static_cast<std::int64_t>(bytes)) {
    if (m_bytes) m_tracker.onAlloc(MemCategory::Workspace, m_bytes);
  }
  ~ScratchAccount() {
    if (m_bytes) m_tracker.onFree(MemCategory::Workspace, m_bytes);
  }
  ScratchAccount(const ScratchAccount&) = delete;
  ScratchAccount& operator=(const ScratchAccount&) = delete;

 private:
  MemoryTracker& m_tracker;
  std::int64_t m_bytes;
};
// Runs an NCHW image op on channels-last operands (cpu_backend_layout.cpp): in() hands an
// input over as it is when contiguous, else as an NCHW copy; out() an output, else NCHW scratch
// that finish() transposes into it once the op has run (not on an exception: the op failed).
// Scratch counts as workspace.
class NchwScratch {
 public:
  explicit NchwScratch(Backend& be) : m_be(be) {}
  const Tensor& in(const Tensor& t);
  const Tensor* in(const Tensor* t) { return t ? &in(*t) : nullptr; }
  Tensor& out(Tensor& t);
  Tensor* out(Tensor* t) { return t ? &out(*t) : nullptr; }
  void finish();

 private:
  Backend& m_be;
  std::deque<Tensor> m_held;  // a deque: the references handed out stay valid as it grows
  std::vector<std::pair<const Tensor*, Tensor*>> m_pending;  // (scratch, destination)
};
// OpenMP only pays past this many elements (thread wake-up costs a few microseconds).
constexpr std::int64_t kParallelThreshold = 1 << 15;
}  // namespace cpu

}  // namespace amp
