// Chunked elementwise processing for mixed dtypes: a chunk of 16-bit values is widened to fp32
// with the vectorised (bit-exact) converters, the op runs as a plain fp32 loop the compiler
// vectorises, and results are rounded back once. Identical numerics to converting element by
// element, at vector speed. fp32 data is used in place, without copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel_grain.h"

namespace amp::cpu {

constexpr std::int64_t kChunk = 1024;  // 4 KiB of fp32: three operands and a result stay in L1

// dtype codes as amp::DType: 0 fp32, 1 fp16, 2 bf16.
// Returns fp32 values of [offset, offset+n): a pointer into base when fp32, else `scratch`.
// bf16 is converted inline: a shift (and a rounding add on the way back) that the compiler
// vectorises in the caller's loop. Calls into the converters cost ~10 ns each, which dominated
// the short rows batch norm walks (an 8x8 plane is 64 values: a ResNet step made ~10^6 calls).
// fp16 needs F16C or AVX-512 instructions the baseline build cannot assume, so it calls them.
inline const float* widenChunk(int code, const void* base, std::int64_t offset, std::int64_t n,
                               float* scratch) {
  if (code == 0) return static_cast<const float*>(base) + offset;
  const auto* p = static_cast<const std::uint16_t*>(base) + offset;
  if (code == 1) {
    convertF16ToF32(p, scratch, static_cast<std::size_t>(n));
  } else {
    for (std::int64_t i = 0; i < n; ++i) scratch[i] = bf16BitsToFloat(p[i]);
  }
  return scratch;
}

// Where to write fp32 results for [offset, offset+n): into base when fp32, else `scratch`
// (then call narrowChunk).
inline float* outputChunk(int code, void* base, std::int64_t offset, float* scratch) {
  return code == 0 ? static_cast<float*>(base) + offset : scratch;
}

inline void narrowChunk(int code, void* base, std::int64_t offset, std::int64_t n,
                        const float* values) {
  if (code == 0) {
    float* dst = static_cast<float*>(base) + offset;
    if (dst != values) std::memcpy(dst, values, static_cast<std::size_t>(n) * 4);
    return;
  }
  auto* p = static_cast<std::uint16_t*>(base) + offset;
  if (code == 1) {
    convertF32ToF16(values, p, static_cast<std::size_t>(n));
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i] = floatToBf16Bits(values[i]);
  }
}

// Sum of v[i]^2 in double. The simd reduction lets the compiler keep one partial sum per vector
// lane (a fixed order for a given build), instead of a latency-bound chain of scalar adds.
inline double sumOfSquaresF64(const float* v, std::int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += double(v[i]) * double(v[i]);
  return s;
}

// A sum over the chunks of n values that is the same bits for any thread count: fn(begin,
// length) returns one chunk's partial sum (in double), each lands in its own slot, and the slots
// are added one after another, in chunk order. A reduction(+) clause would add each thread's own
// run of chunks first, so 1 and 2 threads would associate the sum differently and differ in the
// last bits; the trainer's thread tuner changes the count between steps, and a reported loss or
// gradient norm must not move with it.
template <class Fn>
double sumOverChunks(std::int64_t n, Fn&& fn) {
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partials(static_cast<std::size_t>(chunks));
  const int threads = loopThreads(chunks, kChunk);  // the grain rule (parallel_grain.h)
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = c * kChunk;
    partials[static_cast<std::size_t>(c)] = fn(begin, begin + kChunk <= n ? kChunk : n - begin);
  }
  double sum = 0;
  for (double p : partials) sum += p;
  return sum;
}

// Calls fn(begin, length) for every chunk, in parallel when there is enough work.
template <class Fn>
void forEachChunk(std::int64_t n, Fn&& fn) {
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  const int threads = loopThreads(chunks, kChunk);  // the grain rule (parallel_grain.h)
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = c * kChunk;
    fn(begin, begin + kChunk <= n ? kChunk : n - begin);
  }
}

}  // namespace amp::cpu
