// The causal attention softmax (backend.h: causalSoftmaxForward, causalSoftmaxBackward) over
// (N, T, T) scores, one warp per row (warp_rows.cuh), with the per-element expressions of
// kernels/common/transformer_math.h (the CPU backend's too):
// - forward, row i: s_j = scores * scale rounded to the scores' dtype, max over j <= i, the fp32
//   sum of exp(s_j - max), p_j = exp(s_j - max) / sum rounded once to probs' dtype;
// - backward, row i: dot = fp32 sum over j <= i of p_j * dp_j, dscores_j = the two roundings of
//   p_j * (dp_j - dot) and of its product with scale.
// Columns above the diagonal are never read (the mask makes them -inf: probability 0, gradient
// 0), only written with zeros, so row i costs i + 1 reads: half a full softmax's traffic.
#include <cmath>

#include "kernels/common/transformer_math.h"
#include "kernels/cuda/transformer_kernels.h"
#include "kernels/cuda/warp_rows.cuh"

namespace amp::cuda {

namespace {

// Chunks of a row kept in registers per lane: contexts of up to 1024 with quads (256 without).
constexpr int kCached = 8;

struct SoftmaxArgs {
  std::int64_t matrices, t;
  FloatIn a, b;  // forward: scores; backward: probs, dprobs
  float scale;
  FloatOut out;  // probs or dscores
};

// Row r of the (N * T) rows, its diagonal position i and its first element.
struct CausalRow {
  std::int64_t base, valid;  // valid = i + 1 columns below or on the diagonal
};
__device__ inline CausalRow causalRow(std::int64_t r, std::int64_t t) {
  return {r * t, r % t + 1};
}

// Stores out (the row's values for columns col .. col + W - 1, masked above the diagonal) or
// zeros past it; nothing at or past the row's end.
template <int W, class Value>
__device__ inline void storeMasked(const SoftmaxArgs& a, const CausalRow& row, std::int64_t col,
                                   Value&& value) {
  if (col >= a.t) return;
  Lanes<W> out;
  for (int k = 0; k < W; ++k) out.v[k] = col + k < row.valid ? value(k) : 0.f;
  storeLanes<W>(a.out.code, a.out.data, row.base + col, out);
}

// The zero chunks wholly above the diagonal, past the ones the passes visited.
template <int W>
__device__ inline void storeZerosPast(const SoftmaxArgs& a, const CausalRow& row, int visited,
                                      int lane) {
  const Lanes<W> zero{};
  for (int j = visited; j < chunksFor<W>(a.t); ++j) {
    const std::int64_t col = chunkColumn<W>(j, lane);
    if (col < a.t) storeLanes<W>(a.out.code, a.out.data, row.base + col, zero);
  }
}

template <int W>
__global__ void __launch_bounds__(kBlock) causalSoftmaxForwardKernel(SoftmaxArgs a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t rows = a.matrices * a.t;
  for (std::int64_t r = firstRowOfWarp(); r < rows; r += rowStride()) {
    const CausalRow row = causalRow(r, a.t);
    auto fetch = [&](int j) {
      Lanes<W> s{};
      const std::int64_t col = chunkColumn<W>(j, lane);
      if (col < row.valid) {
        s = loadLanes<W>(a.a.code, a.a.data, row.base + col);
        for (int k = 0; k < W; ++k) s.v[k] = causalScore(a.a.code, s.v[k], a.scale);
      }
      return s;
    };
    WarpRow<Lanes<W>, kCached> cached;
    const int chunks = chunksFor<W>(row.valid);
    cached.load(chunks, fetch);
    float rowMax = -INFINITY;
    cached.forEach(fetch, [&](const Lanes<W>& s, int j) {
      const std::int64_t col = chunkColumn<W>(j, lane);
      for (int k = 0; k < W; ++k)
        if (col + k < row.valid) rowMax = fmaxf(rowMax, s.v[k]);
    });
    rowMax = warpMax(rowMax);
    float sum = 0.f;
    cached.forEach(fetch, [&](const Lanes<W>& s, int j) {
      const std::int64_t col = chunkColumn<W>(j, lane);
      for (int k = 0; k < W; ++k)
        if (col + k < row.valid) sum += softmaxExp(s.v[k], rowMax);
    });
    sum = warpSum(sum);
    cached.forEach(fetch, [&](const Lanes<W>& s, int j) {
      storeMasked<W>(a, row, chunkColumn<W>(j, lane),
                     [&](int k) { return softmaxProb(softmaxExp(s.v[k], rowMax), sum); });
    });
    storeZerosPast<W>(a, row, chunks, lane);
  }
}

template <int W>
struct ProbChunk {
  Lanes<W> p, dp;
};

template <int W>
__global__ void __launch_bounds__(kBlock) causalSoftmaxBackwardKernel(SoftmaxArgs a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t rows = a.matrices * a.t;
  for (std::int64_t r = firstRowOfWarp(); r < rows; r += rowStride()) {
    const CausalRow row = causalRow(r, a.t);
    auto fetch = [&](int j) {
      ProbChunk<W> c{};
      const std::int64_t col = chunkColumn<W>(j, lane);
      if (col < row.valid) {
        c.p = loadLanes<W>(a.a.code, a.a.data, row.base + col);
        c.dp = loadLanes<W>(a.b.code, a.b.data, row.base + col);
      }
      return c;
    };
    WarpRow<ProbChunk<W>, kCached> cached;
    const int chunks = chunksFor<W>(row.valid);
    cached.load(chunks, fetch);
    float dot = 0.f;
    cached.forEach(fetch, [&](const ProbChunk<W>& c, int j) {
      const std::int64_t col = chunkColumn<W>(j, lane);
      for (int k = 0; k < W; ++k)
        if (col + k < row.valid) dot += c.p.v[k] * c.dp.v[k];
    });
    dot = warpSum(dot);
    cached.forEach(fetch, [&](const ProbChunk<W>& c, int j) {
      storeMasked<W>(a, row, chunkColumn<W>(j, lane), [&](int k) {
        return causalScoreGrad(a.out.code, c.p.v[k], c.dp.v[k], dot, a.scale);
      });
    });
    storeZerosPast<W>(a, row, chunks, lane);
  }
}

bool useQuads(std::int64_t t, std::initializer_list<const void*> ps) {
  return t % 4 == 0 && quadAligned(ps);
}

}  // namespace

void launchCausalSoftmaxForward(std::int64_t matrices, std::int64_t t, FloatIn scores,
                                float scale, FloatOut probs, Stream st) {
  if (matrices <= 0 || t <= 0) return;
  const SoftmaxArgs a{matrices, t, scores, {}, scale, probs};
  const unsigned grid = gridForRows(matrices * t);
  if (useQuads(t, {scores.data, probs.data}))
    causalSoftmaxForwardKernel<4><<<grid, kBlock, 0, st>>>(a);
  else
    causalSoftmaxForwardKernel<1><<<grid, kBlock, 0, st>>>(a);
}

void launchCausalSoftmaxBackward(std::int64_t matrices, std::int64_t t, FloatIn probs,
                                 FloatIn dprobs, float scale, FloatOut dscores, Stream st) {
  if (matrices <= 0 || t <= 0) return;
  const SoftmaxArgs a{matrices, t, probs, dprobs, scale, dscores};
  const unsigned grid = gridForRows(matrices * t);
  if (useQuads(t, {probs.data, dprobs.data, dscores.data}))
    causalSoftmaxBackwardKernel<4><<<grid, kBlock, 0, st>>>(a);
  else
    causalSoftmaxBackwardKernel<1><<<grid, kBlock, 0, st>>>(a);
}

}  // namespace amp::cuda
