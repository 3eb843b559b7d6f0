// CUDA backend: batch normalisation with our kernels (kernels/cuda/batch_norm.cu). Validation
// and its messages are the CPU backend's (cpu_backend_conv.cpp), all of it done before anything
// is launched, so a refused call changes nothing (the running statistics included). The work is
// a few stream-ordered launches with the statistics computed on the device: no host round trip,
// no synchronisation. The per-block partial sums and per-channel coefficients live in a
// workspace tensor freed on return (the allocator reuses it only for work queued later).
// Channels-last activations (every one of a call in one format) go to the same kernels with
// the layout as a parameter: the same results, bit for bit.
#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_fast_paths.h"
#include "kernels/cuda/pool_norm_kernels.h"

namespace amp {

using cudabk::floatCode;

namespace {

// x viewed as (N, C, HW), as the CPU's bnDims; NHWC when x is channels-last.
cuda::BatchNormDims bnDims(const Tensor& x, const char* op) {
  if (x.rank() < 2)
    throw std::invalid_argument(std::string(op) + ": x must be (N, C[, H, W]), got " +
                                shapeString(x.shape()));
  const std::int64_t planes = x.dim(0) * x.dim(1);
  return {x.dim(0), x.dim(1), x.numel() / (planes > 1 ? planes : 1), x.channelsLast(),
          cudabk::fastPathEnabled("coalesced-batch-norm")};
}

void requireChannels(std::initializer_list<const Tensor*> ts, std::int64_t c, const char* op) {
  for (const Tensor* t : ts)
    if (!t->defined() || t->numel() != c)
      throw std::invalid_argument(std::string(op) + ": per-channel tensors need " +
                                  std::to_string(c) + " elements");
}

cuda::ChannelIn channelIn(const Tensor& t, const char* op) {
  return {floatCode(t, op), t.rawData()};
}
cuda::ChannelOut channelOut(Tensor& t, const char* op) { return {floatCode(t, op), t.rawData()}; }

void requireOutputLikeInput(const Tensor& x, const Tensor& y) {
  if (y.dtype() != x.dtype() || y.numel() != x.numel())
    throw std::invalid_argument("batch_norm: y must match x in shape and dtype");
}

}  // namespace

void CudaBackend::batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        Tensor& runningMean, Tensor& runningVar, float momentum,
                                        float eps, Tensor& y, Tensor& saveMean,
                                        Tensor& saveInvStd) {
  useDevice();
  const char* op = "batch_norm";
  const cuda::BatchNormDims d = bnDims(x, op);
  requireChannels({&gamma, &beta, &runningMean, &runningVar, &saveMean, &saveInvStd}, d.c, op);
  if (d.count() < 2)
    throw std::invalid_argument("batch_norm: expected more than 1 value per channel when training");
  const cuda::ChannelIn g = channelIn(gamma, op), b = channelIn(beta, op);
  const cuda::ChannelOut rm = channelOut(runningMean, op), rv = channelOut(runningVar, op);
  const cuda::ChannelOut sm = channelOut(saveMean, op), si = channelOut(saveInvStd, op);
  const int xc = floatCode(x, op);
  requireOutputLikeInput(x, y);
  checks::sameFormat({&x, &y}, op);
  const Tensor workspace = empty({(cuda::batchNormWorkspaceBytes(d) + 3) / 4}, DType::F32,
                                 MemCategory::Workspace);
  cuda::launchBatchNormTrain(d, xc, x.rawData(), floatCode(y, op), y.rawData(), g, b, rm, rv, sm,
                             si, momentum, eps, workspace.rawData(), stream());
  checkLaunch("batch_norm forward", cudabk::shapes({&x, &gamma}));
}

void CudaBackend::batchNormForwardEval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       const Tensor& runningMean, const Tensor& runningVar,
                                       float eps, Tensor& y) {
  useDevice();
  const char* op = "batch_norm";
  const cuda::BatchNormDims d = bnDims(x, op);
  requireChannels({&gamma, &beta, &runningMean, &runningVar}, d.c, op);
  const cuda::ChannelIn g = channelIn(gamma, op), b = channelIn(beta, op);
  const cuda::ChannelIn rm = channelIn(runningMean, op), rv = channelIn(runningVar, op);
  const int xc = floatCode(x, op);
  requireOutputLikeInput(x, y);
  checks::sameFormat({&x, &y}, op);
  if (d.c == 0) return;
  const Tensor workspace = empty({(cuda::batchNormWorkspaceBytes(d) + 3) / 4}, DType::F32,
                                 MemCategory::Workspace);
  cuda::launchBatchNormEval(d, xc, x.rawData(), floatCode(y, op), y.rawData(), g, b, rm, rv, eps,
                            workspace.rawData(), stream());
  checkLaunch("batch_norm forward (eval)", cudabk::shapes({&x, &gamma}));
}

void CudaBackend::batchNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                    const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta) {
  useDevice();
  const char* op = "batch_norm backward";
  const cuda::BatchNormDims d = bnDims(x, op);
  requireChannels({&gamma, &saveMean, &saveInvStd, &dgamma, &dbeta}, d.c, op);
  if (dy.numel() != x.numel() || dx.numel() != x.numel() || dx.dtype() != dy.dtype())
    throw std::invalid_argument("batch_norm backward: dy and dx must match x, dx in dy's dtype");
  const cuda::ChannelIn g = channelIn(gamma, op), sm = channelIn(saveMean, op),
                        si = channelIn(saveInvStd, op);
  const cuda::ChannelOut dg = channelOut(dgamma, op), db = channelOut(dbeta, op);
  const int xc = floatCode(x, op), gc = floatCode(dy, op), dc = floatCode(dx, op);
  checks::sameFormat({&dy, &x, &dx}, op);
  if (d.c == 0) return;
  const Tensor workspace = empty({(cuda::batchNormWorkspaceBytes(d) + 3) / 4}, DType::F32,
                                 MemCategory::Workspace);
  cuda::launchBatchNormBackward(d, xc, x.rawData(), gc, dy.rawData(), dc, dx.rawData(), g, sm, si,
                                dg, db, workspace.rawData(), stream());
  checkLaunch("batch_norm backward", cudabk::shapes({&dy, &x, &gamma}));
}

}  // namespace amp
