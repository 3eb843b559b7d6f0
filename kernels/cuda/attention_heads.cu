// Attention heads out of and back into the token rows (backend.h: splitHeads, mergeHeads): pure
// index maps between rows (B*T, P*H*D), P blocks of H heads of D columns each, and one block's
// heads (B*H, T, D). Between equal dtypes they move bits: each head's D values are contiguous on
// both sides, so they move in the widest word D's bytes allow (16 bytes for a 64-wide fp32 or
// bf16 head), one grid-stride pass. Between different dtypes each value is converted (RNE).
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/transformer_kernels.h"

namespace amp::cuda {

namespace {

// Where element o of the per-head tensor, counted in units of `units` per head row (D values,
// or D's bytes in words), lives in the rows tensor, in the same units.
__device__ inline std::int64_t rowsIndex(const HeadShape& s, std::int64_t o, std::int64_t units) {
  const std::int64_t u = o % units, r = o / units;
  const std::int64_t t = r % s.t, bh = r / s.t;
  const std::int64_t h = bh % s.heads, b = bh / s.heads;
  return ((b * s.t + t) * s.parts * s.heads + s.part * s.heads + h) * units + u;
}

template <class Word, bool kSplit>
__global__ void copyHeadsKernel(HeadShape s, std::int64_t units, const Word* src, Word* dst) {
  const std::int64_t total = s.batch * s.heads * s.t * units;
  for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < total;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = rowsIndex(s, o, units);
    if constexpr (kSplit) dst[o] = src[r];
    else dst[r] = src[o];
  }
}

template <bool kSplit>
__global__ void convertHeadsKernel(HeadShape s, FloatIn src, FloatOut dst) {
  const std::int64_t total = s.batch * s.heads * s.t * s.headDim;
  for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < total;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = rowsIndex(s, o, s.headDim);
    if constexpr (kSplit) storeFloat(dst.code, dst.data, o, loadFloat(src.code, src.data, r));
    else storeFloat(dst.code, dst.data, r, loadFloat(src.code, src.data, o));
  }
}

template <class Word, bool kSplit>
void copyAs(const HeadShape& s, std::int64_t headBytes, const void* src, void* dst, Stream st) {
  const std::int64_t units = headBytes / std::int64_t(sizeof(Word));
  copyHeadsKernel<Word, kSplit><<<gridFor(s.batch * s.heads * s.t * units), kBlock, 0, st>>>(
      s, units, static_cast<const Word*>(src), static_cast<Word*>(dst));
}

template <bool kSplit>
void launchHeads(const HeadShape& s, FloatIn src, FloatOut dst, Stream st) {
  if (s.batch * s.heads * s.t * s.headDim <= 0) return;
  if (src.code != dst.code) {
    convertHeadsKernel<kSplit><<<gridFor(s.batch * s.heads * s.t * s.headDim), kBlock, 0, st>>>(
        s, src, dst);
    return;
  }
  // Every head row starts at a multiple of D's bytes from its tensor's start (row strides are
  // multiples of D too), so a word that divides them and both addresses is safe throughout.
  const std::int64_t headBytes = s.headDim * (src.code == 0 ? 4 : 2);
  auto fits = [&](std::int64_t word) {
    return headBytes % word == 0 && reinterpret_cast<std::uintptr_t>(src.data) % word == 0 &&
           reinterpret_cast<std::uintptr_t>(dst.data) % word == 0;
  };
  if (fits(16)) copyAs<int4, kSplit>(s, headBytes, src.data, dst.data, st);
  else if (fits(8)) copyAs<int2, kSplit>(s, headBytes, src.data, dst.data, st);
  else if (fits(4)) copyAs<std::int32_t, kSplit>(s, headBytes, src.data, dst.data, st);
  else copyAs<std::uint16_t, kSplit>(s, headBytes, src.data, dst.data, st);
}

}  // namespace

void launchSplitHeads(const HeadShape& s, FloatIn rows, FloatOut perHead, Stream st) {
  launchHeads<true>(s, rows, perHead, st);
}

void launchMergeHeads(const HeadShape& s, FloatIn perHead, FloatOut rows, Stream st) {
  launchHeads<false>(s, perHead, rows, st);
}

}  // namespace amp::cuda
