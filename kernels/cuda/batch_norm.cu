// Batch normalisation over x viewed as (n, c, hw), with the CPU backend's formulas
// (cpu_backend_conv.cpp): every per-element term is the same fp32 expression, every per-channel
// figure the same double/float expression. Only the order of the per-channel sums differs: here
// they are taken in double, first per thread, then across the block (a fixed shuffle tree), then
// across blocks by a finalize kernel adding the blocks' partial sums in block order. That order
// depends on the shape alone, so reruns agree bit for bit, and no float atomics are used.
//
// Grid of the sums: (channels, chunks), the channel on x, so the blocks that run side by side are
// the channels of one chunk (x varies fastest in launch order). Few channels with many values each (the CNN's (128, 32,
// 28, 28): 100,352 values in each of 32 channels) would leave most of the GPU idle with a block
// per channel; chunks of about 2,048 values give 49 blocks per channel there. Each block writes
// its partial sum to the workspace; a finalize kernel (a thread per channel) computes the mean,
// invStd, running statistics, scale and shift on the device, so nothing waits on the host.
//
// Channels-last (NHWC) tensors are walked in the same (image, position) order per channel, each
// value read where the layout puts it (kernels/common/image_layout.h): the sums, and so every
// output, are bit for bit the NCHW ones. A channel's values then lie c elements apart instead of
// consecutively; the blocks of all channels of a chunk run together (the grid's x) and share
// those lines in L2. Unless (the default) a block takes the 8 or 16 channels side by side at each
// position instead (channelSumsNhwcKernel): the same sums, read 32 bytes at a time.
#include <algorithm>

#include "kernels/common/image_layout.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pool_norm_kernels.h"

namespace amp::cuda {

namespace {

constexpr std::int64_t kValuesPerBlock = 8 * kBlock;  // eight values per thread
constexpr std::int64_t kMaxChunks = 1024;
constexpr std::int64_t kMaxGridX = 2147483647;  // CUDA's limit; more channels loop over blockIdx.x

// fp32 per-channel values kept in the workspace between kernels, one row of c floats each.
enum Slot : int {
  kMean = 0,        // training: float(sum / m), the centre of the squared deviations;
                    // backward: the saved mean as its per-channel tensor holds it
  kScale = 1,       // forward: y = x * scale + shift
  kShift = 2,
  kInvStd = 1,      // backward: the saved invStd as its tensor holds it,
  kGradScale = 2,   // ... gamma * invStd,
  kMeanDy = 3,      // ... float(sum(dy) / m),
  kMeanDyXhat = 4,  // ... float(sum(dy * xhat) / m)
  kSlots = 5,
};

// How one channel's m values (index k = image * hw + position) are split among blocks: block b
// takes [b * perBlock, min(m, (b + 1) * perBlock)), its thread t the values t, t + kBlock, ...
struct ChannelWalk {
  std::int64_t c, hw, m, chunks, perBlock;
  std::int64_t stepImages, stepPositions;  // kBlock values further on: images and positions
  bool nhwc;
};

ChannelWalk channelWalk(const BatchNormDims& d) {
  const std::int64_t m = d.count();
  std::int64_t chunks = std::clamp<std::int64_t>((m + kValuesPerBlock - 1) / kValuesPerBlock, 1,
                                                 kMaxChunks);
  // Whole block-wide steps per chunk, so every warp of every block starts aligned.
  std::int64_t perBlock = (m + chunks - 1) / chunks;
  perBlock = std::max<std::int64_t>(kBlock, (perBlock + kBlock - 1) / kBlock * kBlock);
  chunks = std::max<std::int64_t>(1, (m + perBlock - 1) / perBlock);
  const std::int64_t hw = std::max<std::int64_t>(1, d.hw);  // hw 0 only with m 0: no values
  return {d.c, hw, m, chunks, perBlock, kBlock / hw, kBlock % hw, d.channelsLast};
}

// The caller's buffer: partial sums [2][c][chunks] in double, then kSlots rows of c floats.
struct Scratch {
  double* partials;
  float* perChannel;
};

Scratch scratchIn(void* base, const ChannelWalk& w) {
  auto* partials = static_cast<double*>(base);
  return {partials, reinterpret_cast<float*>(partials + 2 * w.c * w.chunks)};
}

enum class Sums {
  Values,             // sum x
  SquaredDeviations,  // sum (x - mean)^2, mean the fp32 one in the workspace
  Gradients,          // sum dy, and sum dy * xhat into the second half of the partials
};

// Block (x, b) adds chunk b of channels x, x + gridDim.x, ...; partials[ch * chunks + b] gets
// the first sum, partials[(c + ch) * chunks + b] the second (Gradients only).
template <Sums kind>
__global__ void __launch_bounds__(kBlock)
    channelSumsKernel(ChannelWalk w, int xCode, const void* x, int dyCode, const void* dy,
                      const float* mean, ChannelIn saveMean, ChannelIn saveInvStd,
                      double* partials) {
  for (std::int64_t ch = blockIdx.x; ch < w.c; ch += gridDim.x) {
    float mu = 0.f, invStd = 0.f;
    if constexpr (kind == Sums::SquaredDeviations) mu = mean[ch];
    if constexpr (kind == Sums::Gradients) {
      mu = loadFloat(saveMean.code, saveMean.data, ch);
      invStd = loadFloat(saveInvStd.code, saveInvStd.data, ch);
    }
    const std::int64_t begin = blockIdx.y * w.perBlock;
    const std::int64_t end = begin + w.perBlock < w.m ? begin + w.perBlock : w.m;
    double first = 0, second = 0;
    std::int64_t k = begin + threadIdx.x;
    if (k < end) {
      // One division per thread; then the (image, position) walk steps without dividing.
      std::int64_t image = k / w.hw, position = k - image * w.hw;
      // Unrolled so that several loads are in flight per thread (the adds stay in order).
#pragma unroll 4
      for (; k < end; k += kBlock) {
        const std::int64_t at = imageOffset(w.nhwc, image, ch, position, w.c, w.hw);
        const float v = loadFloat(xCode, x, at);
        // The CPU's fp32 terms, each rounded as there before it joins the double sum.
        if constexpr (kind == Sums::Values) first += v;
        if constexpr (kind == Sums::SquaredDeviations) first += (v - mu) * (v - mu);
        if constexpr (kind == Sums::Gradients) {
          const float g = loadFloat(dyCode, dy, at);
          first += g;
          second += g * ((v - mu) * invStd);
        }
        position += w.stepPositions;
        image += w.stepImages;
        if (position >= w.hw) {
          position -= w.hw;
          ++image;
        }
      }
    }
    first = blockSum(first);
    if constexpr (kind == Sums::Gradients) second = blockSum(second);
    if (threadIdx.x == 0) {
      partials[ch * w.chunks + blockIdx.y] = first;
      if constexpr (kind == Sums::Gradients) partials[(w.c + ch) * w.chunks + blockIdx.y] = second;
    }
  }
}

// The same sums for NHWC tensors, G neighbouring channels per block (issue 41: a block per
// channel had a warp read 32 values c elements apart, one 32-byte sector each for 2 or 4 useful
// bytes). Thread t walks exactly the (image, position) sequence it walks above and, at each, reads
// the G channels that lie side by side there (32 bytes: G = 8 fp32 or 16 fp16/bf16 values), into
// G running sums. Each channel's per-thread sums, and the block tree over them, are the ones
// above term for term, so the partials, and every output, keep their bits.
template <Sums kind, int G>
__global__ void __launch_bounds__(kBlock)
    channelSumsNhwcKernel(ChannelWalk w, int xCode, const void* x, int dyCode, const void* dy,
                          const float* mean, ChannelIn saveMean, ChannelIn saveInvStd,
                          double* partials) {
  const std::int64_t groups = (w.c + G - 1) / G;
  for (std::int64_t group = blockIdx.x; group < groups; group += gridDim.x) {
    const std::int64_t ch0 = group * G;
    const int here = w.c - ch0 < G ? static_cast<int>(w.c - ch0) : G;
    float mu[G], invStd[G];
    double first[G], second[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      mu[g] = invStd[g] = 0.f;
      first[g] = second[g] = 0;
      if (g >= here) continue;
      if constexpr (kind == Sums::SquaredDeviations) mu[g] = mean[ch0 + g];
      if constexpr (kind == Sums::Gradients) {
        mu[g] = loadFloat(saveMean.code, saveMean.data, ch0 + g);
        invStd[g] = loadFloat(saveInvStd.code, saveInvStd.data, ch0 + g);
      }
    }
    const std::int64_t begin = blockIdx.y * w.perBlock;
    const std::int64_t end = begin + w.perBlock < w.m ? begin + w.perBlock : w.m;
    std::int64_t k = begin + threadIdx.x;
    if (k < end) {
      std::int64_t image = k / w.hw, position = k - image * w.hw;
      for (; k < end; k += kBlock) {
        const std::int64_t at = (image * w.hw + position) * w.c + ch0;  // imageOffset, NHWC
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if (g >= here) break;
          const float v = loadFloat(xCode, x, at + g);
          if constexpr (kind == Sums::Values) first[g] += v;
          if constexpr (kind == Sums::SquaredDeviations) first[g] += (v - mu[g]) * (v - mu[g]);
          if constexpr (kind == Sums::Gradients) {
            const float gr = loadFloat(dyCode, dy, at + g);
            first[g] += gr;
            second[g] += gr * ((v - mu[g]) * invStd[g]);
          }
        }
        position += w.stepPositions;
        image += w.stepImages;
        if (position >= w.hw) {
          position -= w.hw;
          ++image;
        }
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (g >= here) break;  // uniform in the block: every thread calls blockSum alike
      const double a = blockSum(first[g]);
      double b = 0;
      if constexpr (kind == Sums::Gradients) b = blockSum(second[g]);
      if (threadIdx.x == 0) {
        partials[(ch0 + g) * w.chunks + blockIdx.y] = a;
        if constexpr (kind == Sums::Gradients) partials[(w.c + ch0 + g) * w.chunks + blockIdx.y] = b;
      }
    }
  }
}

// A channel's sum: its blocks' partials added in block order (the same order every call).
__device__ double channelTotal(const double* partials, std::int64_t ch, std::int64_t chunks) {
  double total = 0;
  for (std::int64_t b = 0; b < chunks; ++b) total += partials[ch * chunks + b];
  return total;
}

#define AMP_FOR_EACH_CHANNEL(ch, c)                                                  \
  for (std::int64_t ch = blockIdx.x * std::int64_t(kBlock) + threadIdx.x; ch < (c); \
       ch += std::int64_t(gridDim.x) * kBlock)

__global__ void finalizeMeanKernel(ChannelWalk w, const double* partials, float* perChannel) {
  AMP_FOR_EACH_CHANNEL(ch, w.c)
  perChannel[kMean * w.c + ch] = float(channelTotal(partials, ch, w.chunks) / double(w.m));
}

// The CPU's per-channel step of the training forward, expression for expression: the double
// mean and biased variance normalise, the running variance takes the unbiased one, and scale
// and shift are rounded to fp32 once.
__global__ void finalizeTrainKernel(ChannelWalk w, const double* partials, ChannelIn gamma,
                                    ChannelIn beta, ChannelOut runningMean, ChannelOut runningVar,
                                    ChannelOut saveMean, ChannelOut saveInvStd, float momentum,
                                    float eps, float* perChannel) {
  AMP_FOR_EACH_CHANNEL(ch, w.c) {
    const double sum = channelTotal(partials, ch, w.chunks);
    const double sq = channelTotal(partials + w.c * w.chunks, ch, w.chunks);
    const double mu = sum / double(w.m), inv = 1.0 / sqrt(sq / double(w.m) + eps);
    const float g = loadFloat(gamma.code, gamma.data, ch), b = loadFloat(beta.code, beta.data, ch);
    const float rm = loadFloat(runningMean.code, runningMean.data, ch);
    const float rv = loadFloat(runningVar.code, runningVar.data, ch);
    storeFloat(runningMean.code, runningMean.data, ch,
               float((1.0 - momentum) * rm + momentum * mu));
    storeFloat(runningVar.code, runningVar.data, ch,
               float((1.0 - momentum) * rv + momentum * (sq / double(w.m - 1))));
    storeFloat(saveMean.code, saveMean.data, ch, perChannel[kMean * w.c + ch]);
    storeFloat(saveInvStd.code, saveInvStd.data, ch, float(inv));
    perChannel[kScale * w.c + ch] = float(inv * g);
    perChannel[kShift * w.c + ch] = float(b - mu * inv * g);
  }
}

__global__ void finalizeEvalKernel(std::int64_t c, ChannelIn gamma, ChannelIn beta,
                                   ChannelIn runningMean, ChannelIn runningVar, float eps,
                                   float* perChannel) {
  AMP_FOR_EACH_CHANNEL(ch, c) {
    const float g = loadFloat(gamma.code, gamma.data, ch), b = loadFloat(beta.code, beta.data, ch);
    const float rm = loadFloat(runningMean.code, runningMean.data, ch);
    const float rv = loadFloat(runningVar.code, runningVar.data, ch);
    const double inv = 1.0 / sqrt(double(rv) + double(eps));
    perChannel[kScale * c + ch] = float(inv * g);
    perChannel[kShift * c + ch] = float(b - rm * inv * g);
  }
}

__global__ void finalizeBackwardKernel(ChannelWalk w, const double* partials, ChannelIn gamma,
                                       ChannelIn saveMean, ChannelIn saveInvStd,
                                       ChannelOut dgamma, ChannelOut dbeta, float* perChannel) {
  AMP_FOR_EACH_CHANNEL(ch, w.c) {
    const double sumDy = channelTotal(partials, ch, w.chunks);
    const double sumDyXhat = channelTotal(partials + w.c * w.chunks, ch, w.chunks);
    const float g = loadFloat(gamma.code, gamma.data, ch);
    const float mu = loadFloat(saveMean.code, saveMean.data, ch);
    const float is = loadFloat(saveInvStd.code, saveInvStd.data, ch);
    perChannel[kMean * w.c + ch] = mu;
    perChannel[kInvStd * w.c + ch] = is;
    perChannel[kGradScale * w.c + ch] = g * is;
    perChannel[kMeanDy * w.c + ch] = float(sumDy / double(w.m));
    perChannel[kMeanDyXhat * w.c + ch] = float(sumDyXhat / double(w.m));
    storeFloat(dgamma.code, dgamma.data, ch, float(sumDyXhat));
    storeFloat(dbeta.code, dbeta.data, ch, float(sumDy));
  }
}

#undef AMP_FOR_EACH_CHANNEL

// Elementwise passes: one thread per element, its channel (e / hw) % c, or e % c for NHWC. In
// 32-bit arithmetic whenever x fits (a 64-bit division per element would cost more than the
// memory traffic).
template <class Index>
__global__ void __launch_bounds__(kBlock)
    applyKernel(Index total, Index hw, Index c, bool nhwc, int xCode, const void* x, int yCode,
                void* y, const float* perChannel) {
  const Index step = Index(gridDim.x) * kBlock;
  for (Index e = Index(blockIdx.x) * kBlock + threadIdx.x; e < total; e += step) {
    const Index ch = channelAt(nhwc, e, c, hw);
    const float v = loadFloat(xCode, x, e);
    storeFloat(yCode, y, e, v * perChannel[kScale * c + ch] + perChannel[kShift * c + ch]);
  }
}

template <class Index>
__global__ void __launch_bounds__(kBlock)
    inputGradKernel(Index total, Index hw, Index c, bool nhwc, int xCode, const void* x,
                    int dyCode, const void* dy, int dxCode, void* dx, const float* perChannel) {
  const Index step = Index(gridDim.x) * kBlock;
  for (Index e = Index(blockIdx.x) * kBlock + threadIdx.x; e < total; e += step) {
    const Index ch = channelAt(nhwc, e, c, hw);
    const float k = perChannel[kGradScale * c + ch], mu = perChannel[kMean * c + ch],
                is = perChannel[kInvStd * c + ch], meanDy = perChannel[kMeanDy * c + ch],
                meanDyXhat = perChannel[kMeanDyXhat * c + ch];
    const float g = loadFloat(dyCode, dy, e), v = loadFloat(xCode, x, e);
    storeFloat(dxCode, dx, e, k * (g - meanDy - (v - mu) * is * meanDyXhat));
  }
}

bool fitsIn32Bits(std::int64_t total) { return total < (std::int64_t(1) << 31); }

void launchApply(const BatchNormDims& d, int xCode, const void* x, int yCode, void* y,
                 const float* perChannel, Stream s) {
  const std::int64_t total = d.n * d.c * d.hw;
  if (total <= 0) return;
  if (fitsIn32Bits(total))
    applyKernel<std::uint32_t><<<gridFor(total), kBlock, 0, s>>>(
        std::uint32_t(total), std::uint32_t(d.hw), std::uint32_t(d.c), d.channelsLast, xCode, x,
        yCode, y, perChannel);
  else
    applyKernel<std::uint64_t><<<gridFor(total), kBlock, 0, s>>>(
        std::uint64_t(total), std::uint64_t(d.hw), std::uint64_t(d.c), d.channelsLast, xCode, x,
        yCode, y, perChannel);
}

dim3 sumsGrid(const ChannelWalk& w) {
  // chunks <= kMaxChunks (1024) fits y's limit of 65535.
  return dim3(static_cast<unsigned>(std::min(w.c, kMaxGridX)), static_cast<unsigned>(w.chunks));
}

// One pass of per-channel sums: NHWC with channel groups (the 32 bytes at a position: 8 fp32 or
// 16 16-bit values) unless d.groupNhwcSums is off, else a block per channel.
template <Sums kind>
void launchSums(const BatchNormDims& d, const ChannelWalk& w, int xCode, const void* x, int dyCode,
                const void* dy, const float* mean, ChannelIn saveMean, ChannelIn saveInvStd,
                double* partials, Stream s) {
  if (w.nhwc && d.groupNhwcSums) {
    const int g = xCode == 0 ? 8 : 16;
    const std::int64_t groups = (w.c + g - 1) / g;
    const dim3 grid(static_cast<unsigned>(std::min(groups, kMaxGridX)), static_cast<unsigned>(w.chunks));
    if (g == 8)
      channelSumsNhwcKernel<kind, 8><<<grid, kBlock, 0, s>>>(w, xCode, x, dyCode, dy, mean, saveMean,
                                                             saveInvStd, partials);
    else
      channelSumsNhwcKernel<kind, 16><<<grid, kBlock, 0, s>>>(w, xCode, x, dyCode, dy, mean, saveMean,
                                                              saveInvStd, partials);
    return;
  }
  channelSumsKernel<kind><<<sumsGrid(w), kBlock, 0, s>>>(w, xCode, x, dyCode, dy, mean, saveMean,
                                                        saveInvStd, partials);
}

}  // namespace

std::int64_t batchNormWorkspaceBytes(const BatchNormDims& d) {
  const ChannelWalk w = channelWalk(d);
  return 2 * w.c * w.chunks * std::int64_t(sizeof(double)) +
         kSlots * w.c * std::int64_t(sizeof(float));
}

void launchBatchNormTrain(const BatchNormDims& d, int xCode, const void* x, int yCode, void* y,
                          ChannelIn gamma, ChannelIn beta, ChannelOut runningMean,
                          ChannelOut runningVar, ChannelOut saveMean, ChannelOut saveInvStd,
                          float momentum, float eps, void* workspace, Stream s) {
  if (d.c <= 0) return;
  const ChannelWalk w = channelWalk(d);
  const Scratch sc = scratchIn(workspace, w);
  const unsigned channelBlocks = gridFor(d.c);
  // Two passes over x, as the CPU: the mean, then squared deviations from its fp32 value.
  launchSums<Sums::Values>(d, w, xCode, x, 0, nullptr, nullptr, ChannelIn{}, ChannelIn{}, sc.partials, s);
  finalizeMeanKernel<<<channelBlocks, kBlock, 0, s>>>(w, sc.partials, sc.perChannel);
  launchSums<Sums::SquaredDeviations>(d, w, xCode, x, 0, nullptr, sc.perChannel + kMean * d.c, ChannelIn{},
                                      ChannelIn{}, sc.partials + d.c * w.chunks, s);
  finalizeTrainKernel<<<channelBlocks, kBlock, 0, s>>>(w, sc.partials, gamma, beta, runningMean,
                                                       runningVar, saveMean, saveInvStd,
                                                       momentum, eps, sc.perChannel);
  launchApply(d, xCode, x, yCode, y, sc.perChannel, s);
}

void launchBatchNormEval(const BatchNormDims& d, int xCode, const void* x, int yCode, void* y,
                         ChannelIn gamma, ChannelIn beta, ChannelIn runningMean,
                         ChannelIn runningVar, float eps, void* workspace, Stream s) {
  if (d.c <= 0) return;
  const Scratch sc = scratchIn(workspace, channelWalk(d));
  finalizeEvalKernel<<<gridFor(d.c), kBlock, 0, s>>>(d.c, gamma, beta, runningMean, runningVar,
                                                     eps, sc.perChannel);
  launchApply(d, xCode, x, yCode, y, sc.perChannel, s);
}

void launchBatchNormBackward(const BatchNormDims& d, int xCode, const void* x, int dyCode,
                             const void* dy, int dxCode, void* dx, ChannelIn gamma,
                             ChannelIn saveMean, ChannelIn saveInvStd, ChannelOut dgamma,
                             ChannelOut dbeta, void* workspace, Stream s) {
  if (d.c <= 0) return;
  const ChannelWalk w = channelWalk(d);
  const Scratch sc = scratchIn(workspace, w);
  launchSums<Sums::Gradients>(d, w, xCode, x, dyCode, dy, nullptr, saveMean, saveInvStd, sc.partials, s);
  finalizeBackwardKernel<<<gridFor(d.c), kBlock, 0, s>>>(w, sc.partials, gamma, saveMean,
                                                         saveInvStd, dgamma, dbeta,
                                                         sc.perChannel);
  const std::int64_t total = d.n * d.c * d.hw;
  if (total <= 0) return;
  if (fitsIn32Bits(total))
    inputGradKernel<std::uint32_t><<<gridFor(total), kBlock, 0, s>>>(
        std::uint32_t(total), std::uint32_t(d.hw), std::uint32_t(d.c), d.channelsLast, xCode, x,
        dyCode, dy, dxCode, dx, sc.perChannel);
  else
    inputGradKernel<std::uint64_t><<<gridFor(total), kBlock, 0, s>>>(
        std::uint64_t(total), std::uint64_t(d.hw), std::uint64_t(d.c), d.channelsLast, xCode, x,
        dyCode, dy, dxCode, dx, sc.perChannel);
}

}  // namespace amp::cuda
