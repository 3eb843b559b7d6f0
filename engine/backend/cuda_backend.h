// The CUDA backend: cuBLASLt GEMMs and cuDNN convolutions (fp32 with TF32 off unless
// backend.tf32; fp16/bf16 on tensor cores with fp32 accumulation), our kernels (kernels/cuda) for
// everything else, one stream, one caching device allocator feeding the MemoryTracker, GEMM and
// convolution time from CUDA events, and the multi-tensor AMP step with found_inf and the step's
// stats on the device. Lives on the thread that trains (the CUDA context is made current there
// in the constructor).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/block_cache.h"
#include "engine/backend/cuda_nccl.h"
#include "engine/backend/cuda_step_graph.h"
#include "kernels/cuda/cublaslt_fp8_gemm.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/cuda_kernels.h"

namespace amp {

class CudaBackend final : public Backend {
 public:
  // device: the CUDA ordinal; tf32: fp32 GEMMs may use TF32 tensor cores (PyTorch's
  // allow_tf32); reducedPrecisionReduction: 16-bit GEMMs may reduce split-K partial sums in
  // fp16/bf16 (PyTorch's default; off here). Throws std::runtime_error when the device cannot
  // be used.
  CudaBackend(int device, bool tf32, bool reducedPrecisionReduction = false);
  ~CudaBackend() override;

  std::string name() const override { return "cuda:" + std::to_string(m_device); }
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

  // Channels-last images (cuda_backend_layout.cpp): convolutions, batch norm, pooling and the
  // channel bias work on NHWC activations, so cuDNN's tensor-core kernels transpose nothing.
  // On unless AMP_CUDA_DISABLE=channels-last; setChannelsLast switches it for this backend (the
  // GPU tests compare both paths in one process). convertFormatInto: our transpose kernel.
  MemoryFormat preferredImageFormat() const override;
  void setChannelsLast(bool on) { m_channelsLast = on; }
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

  // fp8 / block-scaled operands (cuda_backend_quantized.cpp; kernels/cuda/fp8_kernels.h and
  // cublaslt_fp8_gemm.h): the codes and scales of the host reference, bit for bit, made on the
  // device. AMP_CUDA_DISABLE=fp8-quantize runs Backend's host defaults over copies instead;
  // fp8-gemm sends every quantised GEMM through the dequantised fp32 fallback.
  float amax(const Tensor& x) override;
  void quantize(const Tensor& x, std::int64_t cols, const QuantSpec& spec, QuantizedTensor& q, MemCategory cat,
                QuantStats* stats = nullptr) override;
  void dequantize(const QuantizedTensor& q, Tensor& out) override;
  // Per-tensor E4M3/E5M2 operands on sm_89+ run on the fp8 tensor cores (cuBLASLt), with fast
  // accumulation for the forward GEMM only, as Transformer Engine: gemmQuantized cannot be told
  // which GEMM it runs, so it takes Linear's forward layout (!transA, transB: y = x . W^T) as
  // the forward; dgrad (dy . W) and wgrad (dy^T . x) have the other layouts. MXFP8 and NVFP4
  // operands blocked along K run on the block-scaled tensor cores of sm_100+ (cuBLASLt
  // VEC32_UE8M0 / VEC16_UE4M3; AMP_CUDA_DISABLE=fp8-block-gemm turns that off). Everything else
  // is dequantised into fp32 by our kernel and multiplied by the fp32 GEMM (TF32 off), said once
  // on stderr.
  void gemmQuantized(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB, Tensor& c,
                     const Tensor* bias = nullptr) override;
  // gemmQuantized with the fast-accumulation choice made by the caller (the tests run both), and
  // D's amax: dAmaxBits (device, one unsigned int; may be null) receives the amax of c as stored
  // (bias added, in c's dtype) as fp32 bits (bitsToFloat), by our amax kernel on the stream:
  // cuBLASLt's AMAX_D_POINTER serves fp8 outputs only (cublaslt_fp8_gemm.h).
  void gemmQuantizedWith(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB, Tensor& c,
                         const Tensor* bias, bool fastAccumulation, unsigned int* dAmaxBits = nullptr);
  // Which path a quantised GEMM of these operands takes here: "fp8 tensor cores (cuBLASLt)",
  // "block-scaled fp8 tensor cores (cuBLASLt VEC32_UE8M0: MXFP8)", "block-scaled fp4 tensor
  // cores (cuBLASLt VEC16_UE4M3: NVFP4)" or "dequantised fp32 GEMM: <why>" (the tests and the
  // fallback's stderr line say which ran and why).
  std::string fp8Description() const;  // the description's fp8 part
  std::string quantizedGemmPath(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB,
                                DType out) const;

  void conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                     const Conv2dGeometry& g) override;
  void conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx,
                          const Conv2dGeometry& g) override;
  void conv2dBackwardWeights(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias,
                             const Conv2dGeometry& g) override;
  bool convWritesFp32FromHalfNatively() const override { return false; }
  // The unscale and optimizer kernels apply a deferred rounding as they read (AMP_CUDA_DISABLE=
  // deferred-grad-rounding turns it off: the layers then round in a pass of their own).
  bool defersGradRounding() const override;
  // The SGD and Adam kernels write each weight's 16-bit copy beside it (AMP_CUDA_DISABLE=
  // optimizer-weight-copies turns it off: every forward then casts, as PyTorch does).
  bool keepsWeightCopies() const override;
  void maxPool2dForward(const Tensor& x, Tensor& y, Tensor& argmax,
                        const Pool2dGeometry& g) override;
  void maxPool2dBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx,
                         const Pool2dGeometry& g) override;
  void batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                             Tensor& runningMean, Tensor& runningVar, float momentum, float eps,
                             Tensor& y, Tensor& saveMean, Tensor& saveInvStd) override;
  void batchNormForwardEval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                            const Tensor& runningMean, const Tensor& runningVar, float eps,
                            Tensor& y) override;
  void batchNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                         const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta) override;

  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void globalAvgPoolForward(const Tensor& x, Tensor& y) override;
  void globalAvgPoolBackward(const Tensor& dy, Tensor& dx) override;

  // The transformer ops (cuda_backend_transformer.cpp; kernels/cuda/transformer_kernels.h).
  void embeddingForward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe, std::int64_t T,
                        Tensor& y) override;
  void embeddingBackward(const Tensor& dy, const Tensor& tokens, std::int64_t T, Tensor& dwte,
                         Tensor& dwpe) override;
  void layerNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                        Tensor& y, Tensor& mean, Tensor& rstd) override;
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

  double crossEntropyForward(const Tensor& logits, const Tensor& labels, Tensor& probs) override;
  void crossEntropyBackward(const Tensor& probs, const Tensor& labels, float gradScale,
                            Tensor& dlogits) override;
  double mseForward(const Tensor& pred, const Tensor& target) override;
  void mseBackward(const Tensor& pred, const Tensor& target, float gradScale,
                   Tensor& dpred) override;
  void crossEntropyForwardIntoStep(const Tensor& logits, const Tensor& labels,
                                   Tensor& probs) override;
  void mseForwardIntoStep(const Tensor& pred, const Tensor& target) override;
  std::int64_t countCorrect(const Tensor& logits, const Tensor& labels) override;

  UnscaleResult unscaleAndCheck(std::span<Tensor* const> grads, float invScale) override;
  std::int64_t countNonFinite(const Tensor& t) override;
  double sumOfSquares(const Tensor& t) override;
  UpdateResult sgdStep(Tensor& param, const Tensor& grad, Tensor* momentumBuf,
                       const SgdParams& p) override;
  UpdateResult adamStep(Tensor& param, const Tensor& grad, Tensor& expAvg, Tensor& expAvgSq,
                        const AdamParams& p) override;

  void beginStep() override;
  void foreachUnscaleAndCheck(std::span<Tensor* const> grads, float invScale,
                              std::span<const DType> roundFirst = {}) override;
  void foreachClipGradNorm(std::span<Tensor* const> grads, double maxNorm) override;
  void gateStep(const StepGate& gate) override;
  void foreachSgdStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                      std::span<Tensor* const> momentum, const SgdParams& p,
                      std::span<const DType> roundFirst = {},
                      std::span<Tensor* const> lowCopies = {}) override;
  void foreachAdamStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                       std::span<Tensor* const> expAvg, std::span<Tensor* const> expAvgSq,
                       const AdamParams& p, std::span<const DType> roundFirst = {},
                       std::span<Tensor* const> lowCopies = {}) override;
  void updateScale(const ScaleRule& rule, const ScaleCounters& current) override;
  StepStats readStepStats() override;

  // Whole-step CUDA graphs (cuda_step_graph.cpp; the protocol is Backend's). On unless
  // AMP_CUDA_DISABLE=cuda-graphs, or setStepGraphs(false) (tests compare both in one process).
  bool capturesSteps() const override;
  void setStepGraphs(bool on) { m_stepGraphsOn = on; }
  // Convolutions cuDNN ran in each layout, and channels-last ones that ran on NCHW copies
  // because no NHWC algorithm would (the GPU suite asserts which layout really ran).
  cuda::ConvLayoutRuns convLayoutRuns() const { return m_conv ? m_conv->layoutRuns() : cuda::ConvLayoutRuns{}; }
  std::int64_t convNhwcFallbacks() const { return m_convNhwcFallbacks; }
  // Graphs dropped because the device ran out of memory outside a step (cuda_alloc_retry.h).
  int graphsDroppedForMemory() const { return m_graphsDroppedForMemory; }
  void beginStepCapture() override;
  void beginStepReplay(float lossSeed) override;
  void beginStepTail() override { m_graphTail = capturing(); }
  bool hasStepGraph() const override { return m_graph != nullptr && m_graph->exec != nullptr; }
  bool stepGraphPending() const override { return m_graphMode != cudabk::GraphMode::Eager; }
  void dropStepGraph() override;
  void incrementInt(Tensor& counter) override;

  ExponentHistogram histogram(const Tensor& t, double multiplier) override;
  void setElement(Tensor& t, std::int64_t index, float value) override;
  void beginStepTiming() override;
  std::optional<double> deviceStepSeconds() const override { return m_stepSeconds; }
  GemmCounters gemmCounters() const override;
  void resetGemmCounters() override;
  std::optional<DeviceMemoryInfo> deviceMemory() const override;

  // Data-parallel ranks on GPUs (cuda_backend_nccl.cpp): NCCL's all-reduce on the training
  // stream, NCCL loaded at run time (libnccl.so.2; the plugin works without it), its id from rank
  // 0 over the ranks' Communicator. Only where every rank has a GPU of its own (NCCL refuses two
  // ranks on one device): false elsewhere, and the gradients go through host memory and MPI.
  // Non-blocking and watched: no wait lasts longer than the Communicator's timeoutSeconds; a
  // failure throws CommunicatorError. AMP_CUDA_DISABLE=nccl turns it off.
  bool allReduceOnDevice(std::span<Tensor* const> grads, Communicator& comm) override;

  cuda::Stream stream() const { return m_stream; }
  // Makes this backend's device current on the calling thread. Every public entry point that
  // launches work or allocates calls it first (cudaSetDevice is a no-op when it already is), so
  // a second CudaBackend on the same thread cannot redirect this one's work.
  void useDevice() const;
  // Throws StepCaptureFailed naming op while a step is being captured: for what a CUDA graph
  // cannot record (a wait for the device, a copy from pageable host memory, a value that
  // changes every step outside the slots, such as a dropout seed).
  void refuseWhileCapturing(const char* op) const;
  // Throws, naming op and detail, if the last launch failed.
  void checkLaunch(const char* op, const std::string& detail) const;
  // Waits for the stream; throws naming op if any queued work failed.
  void synchronize(const char* op) const;

 private:
  void init();               // the constructor's work
  void release() noexcept;   // frees whatever exists (destructor, failed constructor)
  // A small persistent device buffer for reduction results, zeroed before use.
  // Validates and launches the per-row cross-entropy (fp32 probabilities, row losses in double,
  // an out-of-range label flagged in *badLabel); returns the row losses' buffer.
  Tensor launchCrossEntropyRows(const Tensor& logits, const Tensor& labels, Tensor& probs,
                                int* badLabel);
  void* scratch(std::size_t bytes);
  void download(void* host, const void* device, std::size_t bytes, const char* op);
  // Copies a multi-tensor table to the device (stream-ordered, so one buffer serves every
  // launch of a step) and returns its device address and largest element count.
  const cuda::MultiTensorEntry* uploadTable(const std::vector<cuda::MultiTensorEntry>& entries,
                                            std::int64_t& maxN);
  // Convolutions (cuda_backend_conv.cpp). runConv: one pass of `pass` with its bias (forward
  // only), natively in cuDNN when every operand shares a dtype it runs here, otherwise on fp32
  // copies of the inputs. runCudnn: one cuDNN call, its workspace from this backend's allocator.
  // timeInGemmCounters: `work` between an event pair, its flops counted as a GEMM's.
  void runConv(cuda::ConvPass pass, const Conv2dGeometry& g, const Tensor& in0, const Tensor& in1,
               Tensor& out, const Tensor* bias);
  void runCudnn(const cuda::ConvProblem& problem, const Tensor& in0, const Tensor& in1,
                Tensor& out);
  // runCudnn's last step: the operands already in the problem's layout (a channels-last
  // problem's filter KRSC).
  void runCudnnAsLaidOut(const cuda::ConvProblem& problem, const Tensor& in0, const Tensor& in1,
                         Tensor& out);
  void timeInGemmCounters(double flops, const std::function<void()>& work);
  // A cuBLASLt problem of m x n x k with this backend's tf32 and reduction settings, the input
  // dtype a's and the output c's (gemm and gemmBatched; `op` names them in dtype errors).
  cuda::GemmShape gemmShape(std::int64_t m, std::int64_t n, std::int64_t k, bool transA,
                            bool transB, const Tensor& a, const Tensor& c, const char* op) const;
  // Graph slots (cuda_step_graph.cpp). stepScalar: while capturing, a slot holding `value`
  // whose device address the launch reads instead (returned); while replaying, `value` written
  // into the next slot, which must be this op's (nullptr returned, and the caller launches
  // nothing); eagerly, nullptr. stepCheck: the same for arguments a graph bakes in, which a
  // replayed call must repeat exactly. replaying(): the caller only hands over its values.
  const void* stepScalar(cudabk::SlotKind kind, const char* op, const void* value,
                         std::size_t bytes, float multiplier = 1.f, float divisor = 1.f);
  void stepCheck(const char* op, std::vector<std::int64_t> args);
  bool replaying() const { return m_graphMode == cudabk::GraphMode::Replaying; }
  bool capturing() const { return m_graphMode == cudabk::GraphMode::Capturing; }
  // Records a timing event; while capturing, as a node of the graph (cudaEventRecordExternal),
  // so that every replay records it again.
  void recordEvent(void* event, const char* op);
  // Ends the capture and instantiates the graph (StepCaptureFailed when either fails), then
  // launches it between the step's timing events; for a replay, only the launch.
  void launchStepGraph();
  // Frees what the graph holds and hands its memory back to the general cache.
  void releaseGraph() noexcept;
  // The step record (m_stepRecord) or a scratch one for the single-tensor AMP ops.
  cuda::DeviceStepStats* stepRecord() { return m_stepRecord; }

  int m_device = 0;
  bool m_tf32 = false;
  bool m_reducedPrecisionReduction = false;
  bool m_channelsLast = true;  // setChannelsLast; AMP_CUDA_DISABLE=channels-last overrides it
  std::string m_deviceName;
  int m_ccMajor = 0, m_ccMinor = 0;
  cuda::Stream m_stream = nullptr;
  MemoryTracker m_memory;
  std::unique_ptr<cuda::CublasLtGemm> m_gemm;
  std::unique_ptr<cuda::CudnnConv> m_conv;  // bound to m_stream
  std::unique_ptr<cuda::CublasLtFp8Gemm> m_fp8Gemm;  // made by the first fp8 GEMM
  bool m_fp8FallbackSaid = false;                    // the fallback's stderr line, once
  // Block-scaled shapes cuBLASLt had no algorithm for (by shape text, any output): why.
  std::map<std::string, std::string> m_blockGemmRefusals;

  // Caching allocator: freed blocks are kept by rounded size for reuse, as PyTorch's does
  // (cudaFree synchronises the device). Reuse is safe: all work is ordered on one stream.
  BlockCache m_blocks;

  cuda::DeviceStepStats* m_stepRecord = nullptr;  // this step's stats, on the device
  cuda::DeviceStepStats* m_opRecord = nullptr;    // for the single-tensor AMP ops
  void* m_scratch = nullptr;
  std::size_t m_scratchBytes = 0;
  void* m_table = nullptr;
  std::size_t m_tableBytes = 0;
  bool m_unscaledThisStep = false;

  // GEMM timing: an event pair around each GEMM and convolution, summed when the counters are
  // read (after the step's synchronisation, so reading them does not stall).
  struct EventPair { void* start; void* stop; };
  mutable std::vector<EventPair> m_events;
  mutable std::size_t m_eventsUsed = 0;
  mutable GemmCounters m_gemmCounters;
  // Step time: an event at beginStep and one just before the stats are read.
  EventPair m_stepEvents{nullptr, nullptr};
  std::optional<double> m_stepSeconds;
  // beginStepTiming recorded this step's start event: beginStep and a graph's launch leave it.
  bool m_stepTimingMarked = false;
  // NCCL (cuda_backend_nccl.cpp): decided on the first all-reduce, the same on every rank.
  std::shared_ptr<cudabk::NcclRanks> m_nccl;
  bool m_ncclDecided = false;

  // Whole-step graphs (cuda_step_graph.cpp). Memory allocated or freed while capturing belongs
  // to the graph (every replay rewrites it): its free blocks wait in m_graphCache, never in
  // m_blocks, until the graph is dropped. Tensors may be freed on any thread: the set has a lock.
  bool m_stepGraphsOn = true;
  // Atomic: freeBytes reads it on whatever thread frees a tensor.
  std::atomic<cudabk::GraphMode> m_graphMode{cudabk::GraphMode::Eager};
  bool m_graphTail = false;  // capturing the step's AMP tail (beginStepTail)
  int m_graphsDroppedForMemory = 0;
  std::int64_t m_convNhwcFallbacks = 0;
  std::unique_ptr<cudabk::StepGraph> m_graph;
  BlockCache m_graphCache;
  std::unordered_set<void*> m_graphBlocks;
  std::mutex m_graphBlocksMutex;
  void* m_slotsHost = nullptr;    // pinned, cudabk::kGraphSlotBytes
  void* m_slotsDevice = nullptr;  // the device block the graph's first node fills from it
  cuda::Stream m_sideStream = nullptr;  // multi-tensor tables copied while capturing
};

namespace cudabk {
// dtype code of a float tensor (0 fp32, 1 fp16, 2 bf16), or an exception naming op.
int floatCode(const Tensor& t, const char* op);
// The kernels' code for a deferred rounding of grads[i] (0 none, 1 fp16, 2 bf16), checking that
// roundFirst is empty or as long as the list and rounds only fp32 gradients through 16 bits.
int roundCode(std::span<const DType> roundFirst, std::size_t i, const Tensor& grad, const char* op);
void requireSameSize(const Tensor& a, const Tensor& b, const char* op);
// A multi-tensor table as the numbers a graph replay compares (cuda_step_graph.cpp): addresses,
// sizes and dtype codes, entry by entry.
std::vector<std::int64_t> tableKey(const std::vector<cuda::MultiTensorEntry>& entries);
std::string shapes(std::initializer_list<const Tensor*> ts);  // "(2, 3) fp16, (3) fp32"
}  // namespace cudabk

}  // namespace amp
