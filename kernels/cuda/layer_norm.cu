// LayerNorm over the last dimension (backend.h: layerNormForward, layerNormBackward), with the
// per-element expressions of kernels/common/transformer_math.h (the CPU backend's too):
// - forward: one warp per row (warp_rows.cuh): the fp32 sum, mean = sum / C, the fp32 sum of
//   squared deviations from it, rstd = 1 / sqrt(var + eps), y = xhat * gamma + beta rounded once;
// - backward, dx: one warp per row: g = dy * gamma and xhat from the saved mean and rstd, the
//   row's means of g and g * xhat, dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
// - backward, dgamma and dbeta: column sums in bias_grad_order.h's blocked order (32-row blocks
//   from 0 in row order, then the block sums in order), the CPU's order too, in two passes on a
//   2-D grid (below).
// Row sums inside a warp use a fixed butterfly, so reruns agree bit for bit; against the CPU the
// row statistics differ by the order of their sums (the tests' bounds), dgamma and dbeta not.
#include "kernels/common/bias_grad_order.h"
#include "kernels/common/transformer_math.h"
#include "kernels/cuda/transformer_kernels.h"
#include "kernels/cuda/warp_rows.cuh"

namespace amp::cuda {

namespace {

// Chunks of a row kept in registers per lane: rows of up to 1024 values with quads (256 without).
constexpr int kCached = 8;

struct ForwardArgs {
  std::int64_t rows, width;
  FloatIn x, gamma, beta;
  float eps;
  FloatOut y;
  float* mean;
  float* rstd;
};

struct BackwardArgs {
  std::int64_t rows, width;
  FloatIn dy, x, gamma;
  const float* mean;
  const float* rstd;
  FloatOut dx, dgamma, dbeta;
};

template <int W>
__global__ void __launch_bounds__(kBlock) layerNormForwardKernel(ForwardArgs a) {
  const int lane = threadIdx.x % 32;
  const int chunks = chunksFor<W>(a.width);
  for (std::int64_t row = firstRowOfWarp(); row < a.rows; row += rowStride()) {
    const std::int64_t base = row * a.width;
    auto fetch = [&](int j) {
      Lanes<W> v{};
      const std::int64_t col = chunkColumn<W>(j, lane);
      if (col < a.width) v = loadLanes<W>(a.x.code, a.x.data, base + col);
      return v;
    };
    WarpRow<Lanes<W>, kCached> r;
    r.load(chunks, fetch);
    float sum = 0.f;
    r.forEach(fetch, [&](const Lanes<W>& v, int j) {
      if (chunkColumn<W>(j, lane) < a.width)
        for (int k = 0; k < W; ++k) sum += v.v[k];
    });
    const float mean = rowMean(warpSum(sum), a.width);
    float squares = 0.f;
    r.forEach(fetch, [&](const Lanes<W>& v, int j) {
      if (chunkColumn<W>(j, lane) < a.width)
        for (int k = 0; k < W; ++k) {
          const float d = v.v[k] - mean;
          squares += d * d;
        }
    });
    const float rstd = layerNormRstd(rowMean(warpSum(squares), a.width), a.eps);
    r.forEach(fetch, [&](const Lanes<W>& v, int j) {
      const std::int64_t col = chunkColumn<W>(j, lane);
      if (col >= a.width) return;
      const Lanes<W> g = loadLanes<W>(a.gamma.code, a.gamma.data, col);
      const Lanes<W> b = loadLanes<W>(a.beta.code, a.beta.data, col);
      Lanes<W> out;
      for (int k = 0; k < W; ++k)
        out.v[k] = layerNormOutput(layerNormXhat(v.v[k], mean, rstd), g.v[k], b.v[k]);
      storeLanes<W>(a.y.code, a.y.data, base + col, out);
    });
    if (lane == 0) {
      a.mean[row] = mean;
      a.rstd[row] = rstd;
    }
  }
}

// What the input-gradient passes need of a chunk: g = dy * gamma and xhat.
template <int W>
struct GradChunk {
  Lanes<W> g, xhat;
};

template <int W>
__global__ void __launch_bounds__(kBlock) layerNormInputGradKernel(BackwardArgs a) {
  const int lane = threadIdx.x % 32;
  const int chunks = chunksFor<W>(a.width);
  for (std::int64_t row = firstRowOfWarp(); row < a.rows; row += rowStride()) {
    const std::int64_t base = row * a.width;
    const float mean = a.mean[row], rstd = a.rstd[row];
    auto fetch = [&](int j) {
      GradChunk<W> c{};
      const std::int64_t col = chunkColumn<W>(j, lane);
      if (col < a.width) {
        const Lanes<W> dy = loadLanes<W>(a.dy.code, a.dy.data, base + col);
        const Lanes<W> x = loadLanes<W>(a.x.code, a.x.data, base + col);
        const Lanes<W> gamma = loadLanes<W>(a.gamma.code, a.gamma.data, col);
        for (int k = 0; k < W; ++k) {
          c.g.v[k] = dy.v[k] * gamma.v[k];
          c.xhat.v[k] = layerNormXhat(x.v[k], mean, rstd);
        }
      }
      return c;
    };
    WarpRow<GradChunk<W>, kCached> r;
    r.load(chunks, fetch);
    float sumG = 0.f, sumGXhat = 0.f;
    r.forEach(fetch, [&](const GradChunk<W>& c, int j) {
      if (chunkColumn<W>(j, lane) < a.width)
        for (int k = 0; k < W; ++k) {
          sumG += c.g.v[k];
          sumGXhat += c.g.v[k] * c.xhat.v[k];
        }
    });
    const float meanG = rowMean(warpSum(sumG), a.width);
    const float meanGXhat = rowMean(warpSum(sumGXhat), a.width);
    r.forEach(fetch, [&](const GradChunk<W>& c, int j) {
      const std::int64_t col = chunkColumn<W>(j, lane);
      if (col >= a.width) return;
      Lanes<W> out;
      for (int k = 0; k < W; ++k)
        out.v[k] = layerNormInputGrad(c.g.v[k], c.xhat.v[k], meanG, meanGXhat, rstd);
      storeLanes<W>(a.dx.code, a.dx.data, base + col, out);
    });
  }
}

// The parameter gradients in bias_grad_order.h's blocked order, the CPU's too (issue 41: the
// row-order chain this replaced ran on width / 8 blocks, 96 for the GPT's 768 columns over
// 32768 rows). Pass 1: each 32-row block's column sums of dy and of dy * xhat, from 0 in row
// order, on a 2-D grid (a warp per row block, its lanes on 32 neighbouring columns: coalesced)
// into partials [2][blocks][width]. Pass 2: a thread per column adds its blocks' sums from 0 in
// block order and rounds once.
constexpr int kParamColumns = 32;
constexpr int kParamWarps = kBlock / 32;

__global__ void layerNormParamRowBlocksKernel(BackwardArgs a, float* partials) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t col = std::int64_t(blockIdx.x) * kParamColumns + lane;
  const std::int64_t b = std::int64_t(blockIdx.y) * kParamWarps + warp;
  const std::int64_t blocks = biasGradRowBlocks(a.rows);
  if (b >= blocks || col >= a.width) return;
  const std::int64_t r0 = b * kBiasGradRowBlock;
  const std::int64_t r1 = r0 + kBiasGradRowBlock < a.rows ? r0 + kBiasGradRowBlock : a.rows;
  float sumDy = 0.f, sumDyXhat = 0.f;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t at = r * a.width + col;
    const float dy = loadFloat(a.dy.code, a.dy.data, at);
    sumDyXhat += dy * layerNormXhat(loadFloat(a.x.code, a.x.data, at), a.mean[r], a.rstd[r]);
    sumDy += dy;
  }
  partials[b * a.width + col] = sumDy;
  partials[(blocks + b) * a.width + col] = sumDyXhat;
}

__global__ void layerNormParamTotalsKernel(BackwardArgs a, const float* partials) {
  const std::int64_t col = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (col >= a.width) return;
  const std::int64_t blocks = biasGradRowBlocks(a.rows);
  float dbeta = 0.f, dgamma = 0.f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    dbeta += partials[b * a.width + col];
    dgamma += partials[(blocks + b) * a.width + col];
  }
  storeFloat(a.dbeta.code, a.dbeta.data, col, dbeta);
  storeFloat(a.dgamma.code, a.dgamma.data, col, dgamma);
}

}  // namespace

void launchLayerNormForward(std::int64_t rows, std::int64_t width, FloatIn x, FloatIn gamma,
                            FloatIn beta, float eps, FloatOut y, float* mean, float* rstd,
                            Stream st) {
  if (rows <= 0 || width <= 0) return;
  const ForwardArgs a{rows, width, x, gamma, beta, eps, y, mean, rstd};
  if (width % 4 == 0 && quadAligned({x.data, gamma.data, beta.data, y.data}))
    layerNormForwardKernel<4><<<gridForRows(rows), kBlock, 0, st>>>(a);
  else
    layerNormForwardKernel<1><<<gridForRows(rows), kBlock, 0, st>>>(a);
}

std::size_t layerNormParamPartialFloats(std::int64_t rows, std::int64_t width) {
  return static_cast<std::size_t>(2 * biasGradRowBlocks(rows) * (width > 0 ? width : 0));
}

void launchLayerNormBackward(std::int64_t rows, std::int64_t width, FloatIn dy, FloatIn x,
                             FloatIn gamma, const float* mean, const float* rstd, FloatOut dx,
                             FloatOut dgamma, FloatOut dbeta, float* partials, Stream st) {
  if (width <= 0) return;
  const BackwardArgs a{rows, width, dy, x, gamma, mean, rstd, dx, dgamma, dbeta};
  if (rows > 0) {
    if (width % 4 == 0 && quadAligned({dy.data, x.data, gamma.data, dx.data}))
      layerNormInputGradKernel<4><<<gridForRows(rows), kBlock, 0, st>>>(a);
    else
      layerNormInputGradKernel<1><<<gridForRows(rows), kBlock, 0, st>>>(a);
  }
  const std::int64_t blocks = biasGradRowBlocks(rows);
  if (blocks > 0) {
    const std::int64_t columnBlocks = (width + kParamColumns - 1) / kParamColumns;
    const std::int64_t rowGroups = (blocks + kParamWarps - 1) / kParamWarps;  // <= 65535 below 2^24 rows
    layerNormParamRowBlocksKernel<<<dim3(static_cast<unsigned>(columnBlocks), static_cast<unsigned>(rowGroups)),
                                    kBlock, 0, st>>>(a, partials);
  }
  // No rows: the totals are zeros, as the CPU's.
  layerNormParamTotalsKernel<<<static_cast<unsigned>((width + kBlock - 1) / kBlock), kBlock, 0, st>>>(a, partials);
}

}  // namespace amp::cuda
