// The one interface between the engine and the hardware. Everything that reads or writes tensor
// bytes lives behind it, so tensors may sit in device memory. Ops are coarse (a GEMM in a dtype,
// a fused elementwise pass, unscale-and-check, an optimizer step); dtype dispatch stays inside
// each implementation. Numerics: 16-bit inputs, fp32 accumulation, output rounded to its dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/quantized_tensor.h"
#include "engine/core/tensor.h"
#include "engine/dist/communicator.h"
#include "kernels/common/activation_math.h"  // amp::Activation
#include "kernels/common/conv_geometry.h"
#include "kernels/common/scale_update.h"
#include "engine/telemetry/exponent_histogram.h"

namespace amp {

struct UnscaleResult {
  bool foundInf = false;
  int firstNonFinite = -1;  // index into the gradient list of the first non-finite one
  // Sum of squares of the gradients as stored after unscaling, in double: the global gradient
  // norm comes out of the same pass instead of a second read of every gradient.
  double sumOfSquares = 0;
};

// What an optimizer step did, besides updating the parameter.
struct UpdateResult {
  std::int64_t lost = 0;        // non-zero updates that left the stored weight unchanged
  double gradSumOfSquares = 0;  // of the gradient it read (in double): the norm for free
};

struct SgdParams {
  float lr = 0.01f, momentum = 0.f, dampening = 0.f, weightDecay = 0.f;
  bool nesterov = false;
  bool firstStep = true;  // PyTorch seeds the momentum buffer with the gradient on its first use
};

struct AdamParams {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weightDecay = 0.f;
  bool decoupled = false;  // AdamW
  std::int64_t step = 1;   // 1-based step count for bias correction
};

// One training step's AMP bookkeeping, kept where the gradients live (device memory on a GPU)
// and read by the host once per step (Backend::readStepStats), as PyTorch's fused AMP path does:
// the multi-tensor unscale sets found_inf, the optimizer steps read it and skip themselves, the
// scale is updated beside it, and only then does the host look.
struct StepStats {
  double lossSum = 0;      // the micro-batches' losses added by the *IntoStep loss ops
  bool unscaled = false;   // foreachUnscaleAndCheck ran this step
  bool foundInf = false;   // a gradient held inf/NaN before unscaling
  int firstNonFinite = -1;  // index into the unscaled list of the first such gradient
  double unscaledSumOfSquares = 0;  // of the gradients as stored after unscaling
  bool normTaken = false;  // foreachClipGradNorm measured the norm
  double normSumOfSquares = 0;      // what it measured (before clipping)
  bool clipped = false;    // and scaled the gradients down
  bool stepped = false;    // the optimizer step ran (not skipped)
  std::int64_t lost = 0;   // non-zero updates that left the stored weight unchanged
  double stepGradSumOfSquares = 0;  // of the gradients the optimizer step read
  bool scaleUpdated = false;  // updateScale ran: `scale` and `scaleEvent` hold its result
  ScaleCounters scale;
  int scaleEvent = 0;  // a ScaleUpdateEvent
};

// When the step's optimizer updates are skipped, decided where found_inf lives.
struct StepGate {
  bool skipIfFoundInf = false;  // GradScaler.step: skip on a non-finite gradient
  // The post-unscale check in "skip" mode: skip when the gradients were found finite but
  // became non-finite through unscaling (only possible when scale < 1).
  bool skipIfNonFiniteAfterUnscale = false;
};

// A step capture the device refused (an op that cannot be recorded, a graph that does not
// instantiate): nothing of the step ran; run it eagerly instead.
class StepCaptureFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// NCHW convolution geometry (groups = 1, dilation = 1), shared with the kernels.
using Conv2dGeometry = ConvGeometry;

// Max-pooling geometry: a square window, floor mode. `padding` implicit -inf rows and columns on
// every side (torch.nn.MaxPool2d's padding, at most half the window): windows never choose them.
struct Pool2dGeometry {
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  std::int64_t kernel = 2, stride = 2, padding = 0;
  std::int64_t outH() const { return (h + 2 * padding - kernel) / stride + 1; }
  std::int64_t outW() const { return (w + 2 * padding - kernel) / stride + 1; }
};

// A device's whole memory and what is free on it now (cudaMemGetInfo).
struct DeviceMemoryInfo {
  std::int64_t total = 0;
  std::int64_t free = 0;
};

// Work done by GEMMs since the last reset (the benchmark's "GEMM GFLOP/s in the step").
struct GemmCounters {
  double flops = 0;
  double seconds = 0;
  std::int64_t calls = 0;
};

class Backend : public BufferAllocator {
 public:
  ~Backend() override = default;
  virtual std::string name() const = 0;         // "cpu", "cuda:0"
  virtual std::string description() const = 0;  // what runs natively and what is emulated
  // How GEMMs and convolutions in a compute dtype run on this device, in a few words a user can
  // act on: whether natively (and on what) or emulated. Shown per run in the run header, the
  // bench table, the runs table and the status bar. nativeCompute(): on the dtype's own
  // hardware arithmetic (false when emulated, by us or by a library).
  virtual std::string computePath(DType dtype) const { return "native"; }
  virtual bool nativeCompute(DType dtype) const { return true; }

  // ---- creation and transfer -------------------------------------------------------------
  Tensor empty(const Shape& shape, DType dtype, MemCategory category,
               MemoryFormat format = MemoryFormat::Contiguous);
  Tensor zeros(const Shape& shape, DType dtype, MemCategory category,
               MemoryFormat format = MemoryFormat::Contiguous);
  // Host fp32 values rounded (RNE) into a tensor of dtype.
  Tensor fromHost(std::span<const float> values, const Shape& shape, DType dtype,
                  MemCategory category);
  Tensor fromHostInt(std::span<const std::int32_t> values, const Shape& shape,
                     MemCategory category);
  virtual void uploadFloat(Tensor& dst, std::span<const float> src) = 0;  // rounds to dst dtype
  virtual void uploadInt(Tensor& dst, std::span<const std::int32_t> src) = 0;
  virtual std::vector<float> toHostFloat(const Tensor& t) = 0;  // exact widening
  virtual std::vector<std::int32_t> toHostInt(const Tensor& t) = 0;
  // Raw bytes (for checkpoints, bit-exact comparisons).
  virtual std::vector<std::uint8_t> toHostBytes(const Tensor& t) = 0;
  virtual void uploadBytes(Tensor& dst, std::span<const std::uint8_t> src) = 0;

  // ---- memory formats (channels-last images; MemoryFormat in engine/core/tensor.h) --------
  // Every transfer above and setElement speak the logical (NCHW, row-major) order whatever a
  // tensor's format: a ChannelsLast tensor is transposed on the way in or out, so checkpoints,
  // tests and exports never see the difference. Order-free reductions (histogram,
  // sumOfSquares, countNonFinite) read the bytes as they lie. An op with several same-shape
  // operands (elementwise ops, add, the image ops' activations) takes them in one format and
  // refuses a mix with std::logic_error naming the op; weights are always Contiguous.
  //
  // The format image activations take here: convolutions write their outputs (and input
  // gradients) in it, and the layers after them keep their input's. Contiguous unless the
  // device's convolutions want another order (the CUDA backend: ChannelsLast, cuDNN's NHWC).
  virtual MemoryFormat preferredImageFormat() const { return MemoryFormat::Contiguous; }
  // dst = src element by logical index: same shape and dtype (any), any formats (a transpose
  // between NCHW and NHWC where they differ, a copy where they agree).
  virtual void convertFormatInto(const Tensor& src, Tensor& dst) = 0;
  // src itself when it is in `format` already, else a converted copy, accounted in `category`
  // (src's own when not given): the one way every layer and backend changes a tensor's format.
  Tensor toFormat(const Tensor& src, MemoryFormat format,
                  std::optional<MemCategory> category = std::nullopt);
  Tensor contiguous(const Tensor& src) { return toFormat(src, MemoryFormat::Contiguous); }

  // ---- elementwise -----------------------------------------------------------------------
  virtual void fill(Tensor& t, float value) = 0;
  // dst = src converted to dst's dtype (RNE, overflow to inf, subnormals kept).
  virtual void castInto(const Tensor& src, Tensor& dst) = 0;
  Tensor cast(const Tensor& src, DType dtype, MemCategory category);
  virtual void copyInto(const Tensor& src, Tensor& dst) = 0;  // same dtype
  // dst's rows are src's rows at `rows`, in order (same dtype and row shape): a training batch
  // taken from a data set kept on the device, without a trip through the host.
  virtual void gatherRows(const Tensor& src, std::span<const std::int64_t> rows, Tensor& dst) = 0;
  // dst += src (src widened/rounded to dst's dtype; fp32 gradient accumulation).
  virtual void accumulate(Tensor& dst, const Tensor& src) = 0;
  virtual void scaleInPlace(Tensor& t, float factor) = 0;
  // Rounds an fp32 tensor's values to `through` (fp16/bf16) and back, in place: an fp32 GEMM
  // output rounded this way equals a 16-bit GEMM output widened to fp32.
  virtual void roundThrough(Tensor& t, DType through) = 0;
  virtual void activationForward(Activation a, const Tensor& x, Tensor& y) = 0;
  // dx = dy * f'(x), given x and y = f(x).
  virtual void activationBackward(Activation a, const Tensor& x, const Tensor& y,
                                  const Tensor& dy, Tensor& dx) = 0;
  // Inverted dropout: mask (U8) drawn from (seed, offset), y = x * mask / (1 - p).
  virtual void dropoutForward(const Tensor& x, Tensor& mask, Tensor& y, float p,
                              std::uint64_t seed) = 0;
  virtual void dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx, float p) = 0;

  // ---- GEMM ------------------------------------------------------------------------------
  // c (M,N) = op(a) (M,K) · op(b) (K,N) [+ bias (N)], a, b and bias of one dtype; c of that dtype
  // or fp32. Products and sums in fp32, one rounding to c's dtype at the end.
  virtual void gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
                    const Tensor* bias = nullptr) = 0;
  // db (N) = column sums of dy (M,N), accumulated in fp32, rounded to db's dtype.
  virtual void biasGrad(const Tensor& dy, Tensor& db) = 0;

  // ---- fp8 / block-scaled GEMM operands (engine/backend/quantized_tensor.h) ---------------
  // The defaults (backend_quantized.cpp) run engine/amp/fp8_quantize.h's host reference over
  // toHostFloat / uploadBytes copies; a backend overrides them to work where its tensors live,
  // bit for bit the same (the GPU suite checks the CUDA kernels against these).
  // The largest magnitude of x's values; NaN where one is NaN (no scale is made from it).
  virtual float amax(const Tensor& x);
  // Quantises x, read as a row-major (numel / cols) x cols matrix of any float dtype, into q as
  // `spec` says (q's tensors allocated here, in memory category `cat`): the codes and scales
  // that quantizeDequantize's values decode from, and its statistics into *stats when given.
  virtual void quantize(const Tensor& x, std::int64_t cols, const QuantSpec& spec, QuantizedTensor& q,
                        MemCategory cat, QuantStats* stats = nullptr);
  // q decoded into out (F32, q.rows x q.cols): the exact values the quantised GEMM multiplies.
  virtual void dequantize(const QuantizedTensor& q, Tensor& out);
  // c (M,N) = op(a) (M,K) . op(b) (K,N) [+ bias (N), F32], from quantised operands (each
  // quantised along K: a along its columns when !transA, b along its rows when !transB). Exact
  // products of the decoded values, summed in fp32, one rounding to c's dtype (F32 or BF16).
  virtual void gemmQuantized(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB,
                             Tensor& c, const Tensor* bias = nullptr);

  // ---- convolution, pooling, normalisation (NCHW) -----------------------------------------
  virtual void conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                             const Conv2dGeometry& g) = 0;
  virtual void conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx,
                                  const Conv2dGeometry& g) = 0;
  virtual void conv2dBackwardWeights(const Tensor& dy, const Tensor& x, Tensor& dw,
                                     Tensor* dbias, const Conv2dGeometry& g) = 0;
  // Both backward passes of one convolution: dw [and dbias], then dx when not null; the
  // results are conv2dBackwardWeights' and conv2dBackwardData's. A backend may share work between
  // them (the CPU reorders dy once for both); the default makes the two calls.
  virtual void conv2dBackward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor* dx,
                              Tensor& dw, Tensor* dbias, const Conv2dGeometry& g);
  // Whether an fp32 output from 16-bit convolution inputs is a native pass here (oneDNN writes
  // it directly) rather than a widened fp32 convolution off the tensor cores (cuDNN, which has
  // no such mixed configuration): Conv2d then asks for 16-bit weight gradients instead.
  virtual bool convWritesFp32FromHalfNatively() const { return true; }
  // May a layer leave an fp32 weight gradient's rounding through 16 bits to the step's first
  // pass over the gradients (Parameter::gradRoundThrough, the roundFirst lists below) instead of
  // a roundThrough pass of its own? True where that pass folds it in for free (the CUDA
  // backend's unscale and optimizer kernels); the values are the same either way.
  virtual bool defersGradRounding() const { return false; }
  // Should autocast keep each fp32 master's 16-bit copy from step to step, for the optimizer's
  // step to rewrite beside the master (Parameter::lowCopy, the lowCopies lists below)? True
  // where that write is free (the CUDA step kernels already hold the new value in registers)
  // and saves the next forward a cast kernel per weight; the values are the same either way.
  virtual bool keepsWeightCopies() const { return false; }
  // An fp32 tensor's values where this process can read and write them in place (host memory),
  // or nullptr: a data-parallel all-reduce then sums them where they are instead of copying them
  // out and back (engine/dist/data_parallel.cpp).
  virtual float* hostFloats(Tensor& t) { (void)t; return nullptr; }
  // A data-parallel all-reduce of these gradients (sum over the ranks, then divided by them) on
  // the devices themselves (the CUDA backend: NCCL, one GPU per rank), or false when this backend
  // has no such path here; every rank must get the same answer (the callers then take the host
  // path together).
  virtual bool allReduceOnDevice(std::span<Tensor* const> grads, Communicator& comm) {
    (void)grads;
    (void)comm;
    return false;
  }
  // argmax (I32) remembers the winning input index per output for the backward pass.
  virtual void maxPool2dForward(const Tensor& x, Tensor& y, Tensor& argmax,
                                const Pool2dGeometry& g) = 0;
  virtual void maxPool2dBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx,
                                 const Pool2dGeometry& g) = 0;
  // x: (N, C) or (N, C, H, W) in any float dtype; gamma, beta, running stats, saved stats fp32.
  virtual void batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                     Tensor& runningMean, Tensor& runningVar, float momentum,
                                     float eps, Tensor& y, Tensor& saveMean,
                                     Tensor& saveInvStd) = 0;
  virtual void batchNormForwardEval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& runningMean, const Tensor& runningVar,
                                    float eps, Tensor& y) = 0;
  // Training batch norm followed by ReLU, with `residual` added before the ReLU when not null:
  // y = relu(bn(x) [+ residual]), each intermediate rounded to y's dtype as the separate ops round
  // it, so y equals batchNormForwardTrain, add and activationForward in turn, bit for bit (tests
  // hold both to it). y, x and residual share one dtype. The CPU does it in one pass over x, a
  // residual block's elementwise work being memory-bound; the default makes the separate calls.
  virtual void batchNormReluForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         Tensor& runningMean, Tensor& runningVar, float momentum,
                                         float eps, const Tensor* residual, Tensor& y,
                                         Tensor& saveMean, Tensor& saveInvStd);
  virtual void batchNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                 const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                                 Tensor& dgamma, Tensor& dbeta) = 0;

  // batchNormBackward of a batch norm followed by a ReLU, from the ReLU's output gradient dy and
  // its output reluOut: dy is masked where reluOut is not positive first (the ReLU's backward,
  // exact), so the result equals activationBackward then batchNormBackward. The CPU does both in
  // batch norm's passes; the default makes the two calls.
  virtual void batchNormReluBackward(const Tensor& dy, const Tensor& reluOut, const Tensor& x,
                                     const Tensor& gamma, const Tensor& saveMean,
                                     const Tensor& saveInvStd, Tensor& dx, Tensor& dgamma,
                                     Tensor& dbeta);

  // ---- residual networks ----------------------------------------------------------------
  // y = a + b, elementwise over equal element counts, each input of any float dtype: the sum in
  // fp32 rounded once to y's dtype, as PyTorch's add with type promotion (a residual add of a
  // 16-bit branch and an fp32 shortcut writes fp32).
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  // Global average pooling (adaptive_avg_pool2d to 1x1, flattened): x (N, C, H, W) -> y (N, C),
  // each plane summed in fp32 in row-major order, divided by H*W, rounded once to y's dtype.
  virtual void globalAvgPoolForward(const Tensor& x, Tensor& y) = 0;
  // dx (N, C, H, W) = dy (N, C) / (H*W) over each plane, in fp32, rounded once to dx's dtype.
  virtual void globalAvgPoolBackward(const Tensor& dy, Tensor& dx) = 0;

  // ---- transformers (the GPT model: transformer_layers.h) ---------------------------------
  // Token and position embeddings: y (M, C) row m = wte[tokens[m]] + wpe[m % T], tokens (M) I32
  // in [0, V) with M a multiple of T, wte (V, C) and wpe (>= T, C) of any float dtypes; the sum
  // in fp32, rounded once to y's dtype (PyTorch's two embedding lookups and add, in fp32).
  virtual void embeddingForward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                                std::int64_t T, Tensor& y) = 0;
  // Its backward: dwte (V, C) row v = the sum of dy's rows m with tokens[m] == v, dwpe (>= T, C)
  // row t = the sum of dy's rows m with m % T == t (rows past T zero). Each sum runs in fp32 in
  // increasing m (deterministic, as embedding_dense_backward with deterministic algorithms),
  // rounded once to the gradient's dtype; rows no token chose are 0.
  virtual void embeddingBackward(const Tensor& dy, const Tensor& tokens, std::int64_t T,
                                 Tensor& dwte, Tensor& dwpe) = 0;
  // LayerNorm over the last dimension: x (M, C), gamma and beta (C), y (M, C) of any float
  // dtypes. Per row in fp32: mean, biased variance (mean of squared deviations), rstd =
  // 1/sqrt(var + eps), y = (x - mean) * rstd * gamma + beta rounded once to y's dtype. mean and
  // rstd (M) fp32, kept for the backward. 16-bit inputs get fp32 statistics, as PyTorch's kernels.
  virtual void layerNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                float eps, Tensor& y, Tensor& mean, Tensor& rstd) = 0;
  // A residual add and the LayerNorm of its sum (a pre-LayerNorm transformer block's middle):
  // sum = a + b as add gives it (fp32, rounded once to sum's dtype), then layerNormForward(sum,
  // gamma, beta, eps, y, mean, rstd) on the values stored in sum. The default makes the two
  // calls; the CPU does both in one pass over the rows (the same bits).
  virtual void addLayerNormForward(const Tensor& a, const Tensor& b, const Tensor& gamma,
                                   const Tensor& beta, float eps, Tensor& sum, Tensor& y,
                                   Tensor& mean, Tensor& rstd);
  // dx (M, C) = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma and xhat =
  // (x - mean) * rstd, in fp32 rounded once to dx's dtype; dgamma = sum over rows of dy * xhat
  // and dbeta = sum of dy (C), in fp32 in kernels/common/bias_grad_order.h's blocked order (the
  // same on every backend), rounded once to their dtypes.
  virtual void layerNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                 const Tensor& mean, const Tensor& rstd, Tensor& dx,
                                 Tensor& dgamma, Tensor& dbeta) = 0;
  // Causal attention softmax: scores and probs (N, T, T) of any float dtypes. Row i of matrix n:
  // s_j = scores[n,i,j] * scale rounded to scores' dtype (PyTorch multiplies in that dtype
  // before the softmax), probs = softmax over j <= i in fp32 (max subtracted), 0 for j > i (the
  // -inf mask), rounded once to probs' dtype.
  virtual void causalSoftmaxForward(const Tensor& scores, float scale, Tensor& probs) = 0;
  // dscores = round(round(probs * (dprobs - sum_j probs * dprobs)) * scale), both roundings to
  // dscores' dtype (the softmax gradient is cast back to the scores' dtype, then the multiply's
  // backward runs in it); 0 above the diagonal. probs and dprobs of any float dtypes.
  virtual void causalSoftmaxBackward(const Tensor& probs, const Tensor& dprobs, float scale,
                                     Tensor& dscores) = 0;
  // Attention heads out of and back into the token rows. x (B*T, P*C) holds P blocks of C = H*D
  // columns (q, k, v: P = 3); splitHeads copies block `part` into y (B*H, T, D): y[b*H+h, t, d] =
  // x[b*T+t, part*C + h*D + d]. mergeHeads is the inverse: it writes block `part` of y (B*T, P*C)
  // from x (B*H, T, D) and leaves y's other columns alone. Values converted to the destination's
  // dtype (RNE; exact between equal dtypes).
  virtual void splitHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) = 0;
  virtual void mergeHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) = 0;
  // Batched GEMM: c[i] = op(a[i]) · op(b[i]) for every i of the leading dimension, a, b and c
  // of rank 3 with one batch size; dtypes and numerics as gemm (attention's two bmm products).
  virtual void gemmBatched(const Tensor& a, bool transA, const Tensor& b, bool transB,
                           Tensor& c) = 0;
  // Causal self-attention's core in one call, on q, k and v (N, T, D), q and k of one dtype:
  // scores = q·kᵀ in that dtype, probs (N, T, T) = causalSoftmaxForward(scores, scale) in probs'
  // dtype, y (N, T, D) = p·v in v's dtype, where p is probs converted to v's dtype: written into
  // *pv (N, T, T) when probs' dtype is not v's (the product's operand, which the backward
  // reuses), probs itself when it is (pv null). Every value is what those ops in turn give (the
  // default makes the calls); the CPU does one matrix at a time while its scores are in cache,
  // without a scores tensor.
  virtual void causalAttentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                                      float scale, Tensor& probs, Tensor* pv, Tensor& y);
  // Its backward from dy (N, T, D) of v's dtype: dp = dy·vᵀ and dv = pᵀ·dy in v's dtype (p:
  // the product's operand, pv or probs), ds = causalSoftmaxBackward(probs, dp, scale) in q's
  // dtype, dq = ds·k and dk = dsᵀ·q in q's dtype: what those ops in turn give (the default makes
  // them); the CPU again a matrix at a time, without the dp and ds tensors.
  virtual void causalAttentionBackward(const Tensor& dy, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& probs, const Tensor& p,
                                       float scale, Tensor& dq, Tensor& dk, Tensor& dv);

  // ---- losses (computed in fp32, as autocast's fp32 list demands) -------------------------
  // Inputs of any float dtype are widened as they are read and gradients rounded once into
  // their tensor's dtype: the numerics of cast-to-fp32 + fp32 loss + cast back, without the
  // fp32 copies. Mean softmax cross-entropy over the batch; probs (M,C) fp32 for backward.
  virtual double crossEntropyForward(const Tensor& logits, const Tensor& labels,
                                     Tensor& probs) = 0;
  // dlogits = (probs - onehot) * gradScale / M, where gradScale = dLoss (the loss scale).
  virtual void crossEntropyBackward(const Tensor& probs, const Tensor& labels, float gradScale,
                                    Tensor& dlogits) = 0;
  virtual double mseForward(const Tensor& pred, const Tensor& target) = 0;
  virtual void mseBackward(const Tensor& pred, const Tensor& target, float gradScale,
                           Tensor& dpred) = 0;
  // The same forward losses added to the step's stats (StepStats::lossSum) instead of returned:
  // a training step then reads its loss back with everything else, once. A bad label may be
  // reported only by readStepStats.
  virtual void crossEntropyForwardIntoStep(const Tensor& logits, const Tensor& labels,
                                           Tensor& probs);
  virtual void mseForwardIntoStep(const Tensor& pred, const Tensor& target);
  // Number of rows whose argmax equals the label.
  virtual std::int64_t countCorrect(const Tensor& logits, const Tensor& labels) = 0;

  // ---- AMP and optimizers ----------------------------------------------------------------
  // PyTorch's _amp_foreach_non_finite_check_and_unscale_: every gradient is multiplied by
  // invScale (even after an inf is found); foundInf if any element was non-finite before.
  virtual UnscaleResult unscaleAndCheck(std::span<Tensor* const> grads, float invScale) = 0;
  virtual std::int64_t countNonFinite(const Tensor& t) = 0;
  virtual double sumOfSquares(const Tensor& t) = 0;  // accumulated in double
  // Optimizer steps update param in its own dtype (fp32 master, or fp16 in pure-fp16 mode),
  // computing in fp32. They return how many non-zero updates were lost to rounding (the
  // weight did not change although the update was non-zero: |update| < half an ulp) and the
  // gradient's sum of squares.
  virtual UpdateResult sgdStep(Tensor& param, const Tensor& grad, Tensor* momentumBuf,
                               const SgdParams& p) = 0;
  virtual UpdateResult adamStep(Tensor& param, const Tensor& grad, Tensor& expAvg,
                                Tensor& expAvgSq, const AdamParams& p) = 0;

  // ---- the multi-tensor AMP step (PyTorch's _foreach ops and fused optimizers) ------------
  // Within one step: beginStep, [foreachUnscaleAndCheck], [foreachClipGradNorm], gateStep,
  // the optimizer's foreach steps, [updateScale], then readStepStats once. None of them makes
  // the host wait on a device. The base class implements them with the per-tensor ops above and
  // keeps the stats in host memory (the CPU backend); a device backend overrides them all.
  virtual void beginStep();
  // _amp_foreach_non_finite_check_and_unscale_ over the list (backward order).
  //
  // roundFirst (empty, or one entry per tensor): fp32 gradients whose rounding through a
  // 16-bit dtype was deferred (defersGradRounding; F32 = none). Each such gradient is taken as
  // roundThrough(grad, dtype) would have left it, before anything else reads it: the values are
  // those of rounding first and then running the op. The base class does exactly that (a
  // roundThrough, then the op); a device backend folds the rounding into the op's one read of
  // the gradient. The unscale writes the rounded, unscaled values back; the optimizer steps
  // only read them (the gradient in memory then still awaits its rounding).
  virtual void foreachUnscaleAndCheck(std::span<Tensor* const> grads, float invScale,
                                      std::span<const DType> roundFirst = {});
  // clip_grad_norm_: the norm of the unscaled gradients (measured now if nothing was unscaled);
  // when finite and above maxNorm, every gradient is scaled by float(maxNorm / (norm + 1e-6)).
  virtual void foreachClipGradNorm(std::span<Tensor* const> grads, double maxNorm);
  // Decides whether this step's optimizer updates run (StepStats::stepped).
  virtual void gateStep(const StepGate& gate);
  // Optimizer steps over parameter lists (equal lengths; momentum entries may be null for plain
  // SGD). They do nothing when gateStep decided to skip; otherwise as sgdStep/adamStep, with the
  // lost updates and the gradients' sum of squares added to the step's stats.
  //
  // lowCopies (empty, or one entry per parameter, null for none): a 16-bit tensor per fp32
  // master that the step, when it runs, overwrites with the new master's rounding, as
  // castInto(master, copy) would (keepsWeightCopies). Skipped steps leave them alone.
  virtual void foreachSgdStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                              std::span<Tensor* const> momentum, const SgdParams& p,
                              std::span<const DType> roundFirst = {},
                              std::span<Tensor* const> lowCopies = {});
  virtual void foreachAdamStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                               std::span<Tensor* const> expAvg, std::span<Tensor* const> expAvgSq,
                               const AdamParams& p, std::span<const DType> roundFirst = {},
                               std::span<Tensor* const> lowCopies = {});
  // _amp_update_scale_: applies the rule to `current` with this step's found_inf.
  virtual void updateScale(const ScaleRule& rule, const ScaleCounters& current);
  // The step's stats, brought to the host: the one synchronisation of a step.
  virtual StepStats readStepStats();

  // ---- whole-step graphs (CUDA graphs: engine/backend/cuda_step_graph.cpp) ----------------
  // A backend that can record one training step's device work and replay it with the host doing
  // almost nothing (no layer code, no launches). The trainer (engine/train/step_graph_policy.h)
  // decides when: shapes fixed, optimizer state made, no telemetry that reads mid-step.
  //   capture: beginStepCapture(), then the step exactly as an eager one; its readStepStats
  //            ends the capture, runs the recorded step and reads its stats. Nothing runs
  //            before that, so a capture that fails (StepCaptureFailed) changed no device data:
  //            the caller restores its host state and runs the step eagerly.
  //   replay:  the next batch uploaded into the captured step's input tensors, then
  //            beginStepReplay(lossSeed) and the step's AMP tail only (beginStep, unscale, clip,
  //            gate, optimizer step, updateScale: the calls the captured step made, in its order,
  //            which hand over this step's scalars: 1/scale, lr, Adam's bias corrections, the
  //            scale counters); its readStepStats launches the graph and reads the stats.
  // Any other launch during a replay is a logic error. Memory allocated while capturing stays
  // the graph's until dropStepGraph (it is rewritten by every replay).
  virtual bool capturesSteps() const { return false; }
  virtual void beginStepCapture();
  virtual void beginStepReplay(float lossSeed);
  // The trainer's mark between the step's forward/backward and its AMP tail (the first settle,
  // unscale, clip or optimizer call follows): a replay runs the tail's calls again, so a
  // capturing backend records the tail's generic ops (roundThrough) as the tail's.
  virtual void beginStepTail() {}
  virtual bool hasStepGraph() const { return false; }
  // A capture or replay has begun and its readStepStats has not launched it: nothing of this
  // step has run on the device, so the step can still be run eagerly instead.
  virtual bool stepGraphPending() const { return false; }
  virtual void dropStepGraph() {}
  // A 0-d int32 counter += 1 (BatchNorm's num_batches_tracked) without a host round trip.
  virtual void incrementInt(Tensor& counter);

  // ---- telemetry and teaching ------------------------------------------------------------
  // Histogram of t's values multiplied by `multiplier` (in double: 1 = as stored, 1/scale =
  // unscaled domain).
  virtual ExponentHistogram histogram(const Tensor& t, double multiplier) = 0;
  virtual void setElement(Tensor& t, std::int64_t index, float value) = 0;  // fault injection
  // The trainer's mark where a training step's time starts, before its batch is read and
  // uploaded, whether the step then runs eagerly, is captured or is replayed (a graph step's
  // batch goes into the graph's input tensors before the capture or replay begins): every
  // step's time covers the same work. A device backend starts its step clock here; without
  // the mark, beginStep starts it.
  virtual void beginStepTiming() {}
  // The last training step's time on the device, from beginStepTiming (else beginStep) to
  // readStepStats, where the device keeps its own clock (CUDA events); nothing on the CPU,
  // where wall time is the truth.
  virtual std::optional<double> deviceStepSeconds() const { return std::nullopt; }
  virtual GemmCounters gemmCounters() const { return {}; }
  // The device's total and free memory, where the backend has a device of its own (the memory
  // chart shows them beside this run's bytes); nothing on the CPU.
  virtual std::optional<DeviceMemoryInfo> deviceMemory() const { return std::nullopt; }
  virtual void resetGemmCounters() {}

 protected:
  // The base class's form of roundFirst: roundThrough each gradient that has a dtype there.
  void roundDeferred(std::span<Tensor* const> grads, std::span<const DType> roundFirst,
                     const char* op);
  // The base class's form of lowCopies: castInto each master that has a copy there.
  void writeWeightCopies(std::span<Tensor* const> params, std::span<Tensor* const> lowCopies,
                         const char* op);

  StepStats m_stepStats;  // the base class's multi-tensor ops keep the step's stats here
};

// The CPU backend always exists; the CUDA one only when a device is found at run time.
std::unique_ptr<Backend> makeCpuBackend();

}  // namespace amp
