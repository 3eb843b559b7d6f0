// LayerNorm over the last dimension (backend.h: layerNormForward, layerNormBackward), with the
// per-element expressions of kernels/common/transformer_math.h (the CPU backend's too):
// - forward: one warp per row (warp_rows.cuh): the fp32 sum, mean = sum / C, the fp32 sum of
//   squared deviations from it, rstd = 1 / sqrt(var + eps), y = xhat * gamma + beta rounded once;
// - backward, dx: one warp per row: g = dy * gamma and xhat from the saved mean and rstd, the
//   row's means of g and g * xhat, dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
// - backward, dgamma and dbeta: backend.h fixes their order (fp32, one running sum per column
//   in row order), a chain no parallel reduction may reorder. So a block owns 8 columns: seven
//   warps stream tiles of 256 rows into shared memory (dy and dy * xhat, computed as they land),
//   double-buffered, while 16 lanes of the eighth add each tile to the 16 running sums, one
//   add per row each. The loads of a whole tile are in flight at once; only the adds run in
//   sequence. Estimated, not yet measured: about 4 cycles a row for the adds and a memory
//   latency a tile for the loads, some 20 to 40 us for 8192 rows whatever the width.
// Row sums inside a warp use a fixed butterfly, so reruns agree bit for bit; against the CPU the
// row statistics differ by the order of their sums (the tests' bounds), dgamma and dbeta not.
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

// The parameter gradients' tiles: kColumns columns by kTileRows rows, double-buffered. The time
// goes on waiting for the rows a tile needs (one tile's loads are in flight at a time), so few
// columns and long tiles: 8 columns of 256 rows, each element's dy and dy * xhat side by side
// (16 floats a row: the summing lanes read 16 neighbouring words, no bank conflicts), 32 KiB.
constexpr int kColumns = 8;
constexpr int kTileRows = 256;
constexpr int kLoaderThreads = kBlock - 32;  // warp 0 sums, the other seven load
constexpr int kLoadsPerThread = (kTileRows * kColumns + kLoaderThreads - 1) / kLoaderThreads;

__global__ void __launch_bounds__(kBlock) layerNormParamGradKernel(BackwardArgs a) {
  __shared__ float tile[2][kTileRows][2][kColumns];  // [buffer][row][dy, dy * xhat][column]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t firstColumn = std::int64_t(blockIdx.x) * kColumns;
  const std::int64_t tiles = (a.rows + kTileRows - 1) / kTileRows;
  // Summing lanes: 0..7 add dy (dbeta), 8..15 dy * xhat (dgamma), for column lane % 8.
  const int which = lane / kColumns, sumColumn = lane % kColumns;
  float sum = 0.f;
  // Step k: the loaders fill buffer k % 2 with tile k while warp 0 adds tile k - 1 from the
  // other buffer; the barrier then hands the filled buffer over.
  for (std::int64_t k = 0; k <= tiles; ++k) {
    if (warp > 0 && k < tiles) {
      const int buf = static_cast<int>(k & 1);
      const int loader = threadIdx.x - 32;
#pragma unroll
      for (int i = 0; i < kLoadsPerThread; ++i) {
        const int e = loader + i * kLoaderThreads;  // element of the tile: row e / 8, column e % 8
        if (e >= kTileRows * kColumns) break;
        const int r = e / kColumns, c = e % kColumns;
        const std::int64_t row = k * kTileRows + r, col = firstColumn + c;
        float dy = 0.f, dyXhat = 0.f;
        if (row < a.rows && col < a.width) {
          const std::int64_t at = row * a.width + col;
          dy = loadFloat(a.dy.code, a.dy.data, at);
          dyXhat = dy * layerNormXhat(loadFloat(a.x.code, a.x.data, at), a.mean[row], a.rstd[row]);
        }
        tile[buf][r][0][c] = dy;
        tile[buf][r][1][c] = dyXhat;
      }
    }
    if (warp == 0 && k > 0 && lane < 2 * kColumns) {
      const int buf = static_cast<int>((k - 1) & 1);
      const std::int64_t left = a.rows - (k - 1) * kTileRows;
      const int count = left < kTileRows ? static_cast<int>(left) : kTileRows;
#pragma unroll 8
      for (int r = 0; r < count; ++r) sum += tile[buf][r][which][sumColumn];
    }
    __syncthreads();
  }
  const std::int64_t col = firstColumn + sumColumn;
  if (warp == 0 && lane < 2 * kColumns && col < a.width) {
    if (which == 0) storeFloat(a.dbeta.code, a.dbeta.data, col, sum);
    else storeFloat(a.dgamma.code, a.dgamma.data, col, sum);
  }
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

void launchLayerNormBackward(std::int64_t rows, std::int64_t width, FloatIn dy, FloatIn x,
                             FloatIn gamma, const float* mean, const float* rstd, FloatOut dx,
                             FloatOut dgamma, FloatOut dbeta, Stream st) {
  if (width <= 0) return;
  const BackwardArgs a{rows, width, dy, x, gamma, mean, rstd, dx, dgamma, dbeta};
  if (rows > 0) {
    if (width % 4 == 0 && quadAligned({dy.data, x.data, gamma.data, dx.data}))
      layerNormInputGradKernel<4><<<gridForRows(rows), kBlock, 0, st>>>(a);
    else
      layerNormInputGradKernel<1><<<gridForRows(rows), kBlock, 0, st>>>(a);
  }
  const std::int64_t blocks = (width + kColumns - 1) / kColumns;
  layerNormParamGradKernel<<<static_cast<unsigned>(blocks), kBlock, 0, st>>>(a);
}

}  // namespace amp::cuda
