// fp8 / block-scaled quantisation on the device (the plan is in fp8_kernels.h): block amaxes and
// scales, then the codes and the statistics in one pass over the elements, and the decode. Every
// per-element and per-block decision is a kernels/common function the host reference
// (engine/amp/fp8_quantize.cpp) calls too; with --fmad=false (kernels/CMakeLists.txt) nvcc
// contracts nothing, so the fp32 operations are the same operations with the same roundings.
#include "kernels/common/mix64.h"
#include "kernels/cuda/fp8_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

namespace {

__device__ inline unsigned int warpMaxBits(unsigned int v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const unsigned int o = __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    v = o > v ? o : v;
  }
  return v;
}

// |x| as bits: ordered as the magnitudes, a NaN above inf (so a max keeps it).
__device__ inline std::int64_t smaller(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

__device__ inline unsigned int magnitudeBits(float v) { return floatBits(v) & 0x7FFFFFFFu; }

// Where the values come from: the input in its dtype, or NVFP4's transformed fp32 copy.
struct Source {
  int code;
  const void* data;
  __device__ float operator()(std::int64_t i) const { return loadFloat(code, data, i); }
};

// ---- phase 1: a warp per block ---------------------------------------------------------------
__global__ void blockScalesKernel(Source x, QuantLayout L, QuantKernelSpec spec, const unsigned int* tensorAmaxBits,
                                  float* blockAmax, std::uint8_t* scaleCodes, float* scaleFactors) {
  const std::int64_t warpsPerGrid = std::int64_t(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x % 32;
  const std::int64_t blocks = L.blockCount(), perLine = L.blocksPerLine();
  for (std::int64_t b = blockIdx.x * std::int64_t(blockDim.x / 32) + threadIdx.x / 32; b < blocks; b += warpsPerGrid) {
    const std::int64_t l0 = b / perLine * L.tileLines(), p0 = b % perLine * L.block;
    const std::int64_t l1 = smaller(L.lines(), l0 + L.tileLines()), p1 = smaller(L.length(), p0 + L.block);
    const std::int64_t width = p1 - p0, total = (l1 - l0) * width;
    unsigned int m = 0;
    for (std::int64_t j = lane; j < total; j += 32) {
      const unsigned int v = magnitudeBits(x(L.at(l0 + j / width, p0 + j % width)));
      m = v > m ? v : m;
    }
    m = warpMaxBits(m);
    if (lane != 0) continue;
    const float amax = bitsToFloat(m);
    blockAmax[b] = amax;
    switch (spec.scaling) {
      case QuantScaling::Mx: scaleCodes[b] = mxScaleCode(amax, spec.format, spec.mxRounding); break;
      case QuantScaling::Blockwise:
        scaleFactors[b] = 1.0f / blockwiseScale(amax, miniMax(spec.format), spec.powerOfTwo);
        break;
      case QuantScaling::Nvfp4:
        scaleCodes[b] = static_cast<std::uint8_t>(
            nvfp4BlockScaleCode(amax, nvfp4TensorScale(bitsToFloat(*tensorAmaxBits))));
        break;
      case QuantScaling::PerTensor: break;
    }
  }
}

// ---- phase 2: one thread per code byte -------------------------------------------------------
struct ElementStats {
  unsigned long long count = 0, nonzero = 0, underflow = 0, overflow = 0, nonFinite = 0;
  double signalSq = 0, errorSq = 0;
  // engine/amp/fp8_quantize.cpp's Quantizer::record, the same conditions.
  __device__ void record(float v, float q, bool over) {
    ++count;
    if (!isfinite(v)) {
      ++nonFinite;
      return;
    }
    overflow += over;
    nonzero += v != 0;
    underflow += v != 0 && q == 0;
    if (isfinite(q)) {
      const double d = double(q) - double(v);
      signalSq += double(v) * v;
      errorSq += d * d;
    }
  }
};

struct ElementQuantizer {
  Source x;
  QuantLayout L;
  QuantKernelSpec spec;
  const float* blockAmax;
  float S;  // Nvfp4's tensor scale

  // The cast of one scaled value: round to nearest even, or stochastic with the element's
  // random bits (mix64 of the seed and its row-major index: the host's draw).
  __device__ std::uint32_t cast(float scaled, std::int64_t i, bool& over) const {
    std::uint32_t random = 0;
    if (spec.stochastic)
      random = static_cast<std::uint32_t>(mix64(spec.seed ^ (std::uint64_t(i) * 0x9E3779B97F4A7C15ull)) >> 32);
    return floatToMini(scaled, spec.format, spec.overflow, spec.stochastic, random, &over);
  }

  // Element i's code; its value before (v) and after (q) for the statistics.
  __device__ std::uint32_t operator()(std::int64_t i, float& v, float& q, bool& over) const {
    v = x(i);
    over = false;
    const std::int64_t r = i / L.cols, c = i % L.cols;
    switch (spec.scaling) {
      case QuantScaling::PerTensor: {
        const std::uint32_t code = cast(v * spec.tensorScale, i, over);
        q = miniToFloat(code, spec.format) * (1.0f / spec.tensorScale);
        return code;
      }
      case QuantScaling::Mx: {
        const std::uint8_t e = mxScaleCode(blockAmax[L.blockOf(r, c)], spec.format, spec.mxRounding);
        const std::uint32_t code = cast(divideByE8m0(v, e), i, over);
        q = multiplyByE8m0(miniToFloat(code, spec.format), e);
        return code;
      }
      case QuantScaling::Blockwise: {
        const float s = blockwiseScale(blockAmax[L.blockOf(r, c)], miniMax(spec.format), spec.powerOfTwo);
        const std::uint32_t code = cast(v * s, i, over);
        q = miniToFloat(code, spec.format) * (1.0f / s);
        return code;
      }
      case QuantScaling::Nvfp4: {
        const float sb = miniToFloat(nvfp4BlockScaleCode(blockAmax[L.blockOf(r, c)], S), MiniFormat::E4M3);
        const float mul = sb > 0 ? S / sb : 0.0f;
        const std::uint32_t code = cast(v * mul, i, over);
        q = (miniToFloat(code, spec.format) * sb) / S;
        return code;
      }
    }
    q = v;
    return 0;
  }
};

__global__ void elementsKernel(ElementQuantizer z, const unsigned int* tensorAmaxBits, std::uint8_t* codes,
                               QuantStatsDevice* stats, unsigned int* amaxBits) {
  if (z.spec.scaling == QuantScaling::Nvfp4) z.S = nvfp4TensorScale(bitsToFloat(*tensorAmaxBits));
  const std::int64_t n = z.L.rows * z.L.cols;
  const bool packed = z.spec.format == MiniFormat::E2M1;
  const std::int64_t units = quantCodeBytes(n, z.spec.format);
  ElementStats st;
  unsigned int amax = 0;  // |v| bits of the values read (amaxBits)
  for (std::int64_t u = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; u < units;
       u += std::int64_t(gridDim.x) * blockDim.x) {
    float v, q;
    bool over;
    if (!packed) {
      codes[u] = static_cast<std::uint8_t>(z(u, v, q, over));
      if (stats) st.record(v, q, over);
      amax = max(amax, magnitudeBits(v));
      continue;
    }
    const std::uint32_t even = z(2 * u, v, q, over);
    if (stats) st.record(v, q, over);
    amax = max(amax, magnitudeBits(v));
    std::uint32_t odd = 0;  // past the last value: the byte's high nibble stays 0
    if (2 * u + 1 < n) {
      odd = z(2 * u + 1, v, q, over);
      if (stats) st.record(v, q, over);
      amax = max(amax, magnitudeBits(v));
    }
    codes[u] = packE2m1(even, odd);
  }
  if (amaxBits) {  // uniform over the grid: every lane of a warp takes part in the shuffles
    amax = warpMaxBits(amax);
    if (threadIdx.x % 32 == 0 && amax != 0) atomicMax(amaxBits, amax);
  }
  if (!stats) return;
  const unsigned long long count = blockSumCount(st.count), nonzero = blockSumCount(st.nonzero),
                           underflow = blockSumCount(st.underflow), overflow = blockSumCount(st.overflow),
                           nonFinite = blockSumCount(st.nonFinite);
  const double signalSq = blockSum(st.signalSq), errorSq = blockSum(st.errorSq);
  if (threadIdx.x != 0) return;
  atomicAdd(&stats->count, count);
  atomicAdd(&stats->nonzero, nonzero);
  atomicAdd(&stats->underflow, underflow);
  atomicAdd(&stats->overflow, overflow);
  atomicAdd(&stats->nonFinite, nonFinite);
  atomicAdd(&stats->signalSq, signalSq);
  atomicAdd(&stats->errorSq, errorSq);
}

// ---- decode ----------------------------------------------------------------------------------
__global__ void dequantizeKernel(const std::uint8_t* codes, const std::uint8_t* scaleCodes, const float* scaleFactors,
                                 QuantLayout L, QuantDecoder decode, float* out) {
  const std::int64_t n = L.rows * L.cols;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float blockValue = 1.0f;
    std::uint8_t blockCode = 127;
    if (decode.scaling != QuantScaling::PerTensor) {
      const std::int64_t b = L.blockOf(i / L.cols, i % L.cols);
      if (decode.scaling == QuantScaling::Blockwise) blockValue = scaleFactors[b];
      else if (decode.scaling == QuantScaling::Nvfp4) blockValue = miniToFloat(scaleCodes[b], MiniFormat::E4M3);
      else blockCode = scaleCodes[b];
    }
    out[i] = decode(loadQuantCode(codes, i, decode.format), blockValue, blockCode);
  }
}

// ---- NVFP4's Hadamard transform into an fp32 copy ----------------------------------------------
__global__ void hadamardLinesKernel(Source x, QuantLayout L, std::uint16_t signs, float* out) {
  const std::int64_t lines = L.lines(), groups = (L.length() + 15) / 16, total = lines * groups;
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    // Neighbouring threads on neighbouring addresses: down columns the line varies fastest.
    const std::int64_t line = L.alongRows ? t % lines : t / groups, g = L.alongRows ? t / lines : t % groups;
    const std::int64_t p0 = g * 16;
    if (p0 + 16 > L.length()) {  // a last partial group is left as it is (the host's rule)
      for (std::int64_t p = p0; p < L.length(); ++p) out[L.at(line, p)] = x(L.at(line, p));
      continue;
    }
    float buf[16];
    for (int j = 0; j < 16; ++j) buf[j] = x(L.at(line, p0 + j));
    hadamard16(buf, signs);
    for (int j = 0; j < 16; ++j) out[L.at(line, p0 + j)] = buf[j];
  }
}

__global__ void amaxBitsKernel(Source x, std::int64_t n, unsigned int* amaxBits) {
  unsigned int m = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const unsigned int v = magnitudeBits(x(i));
    m = v > m ? v : m;
  }
  m = warpMaxBits(m);
  if (threadIdx.x % 32 == 0 && m != 0) atomicMax(amaxBits, m);
}

// 32 x 32 tiles through shared memory: reads and writes both along rows.
__global__ void transposeBytesKernel(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst) {
  __shared__ std::uint8_t tile[32][33];
  const std::int64_t r0 = std::int64_t(blockIdx.y) * 32, c0 = std::int64_t(blockIdx.x) * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const std::int64_t r = r0 + y, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[y][threadIdx.x] = src[r * cols + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const std::int64_t c = c0 + y, r = r0 + threadIdx.x;  // dst row c, column r
    if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][y];
  }
}

}  // namespace

void launchAmaxBits(int code, const void* x, std::int64_t n, unsigned int* amaxBits, Stream s) {
  if (n > 0) amaxBitsKernel<<<gridFor(n, 1024), kBlock, 0, s>>>(Source{code, x}, n, amaxBits);
}

void launchHadamard16Lines(int code, const void* x, float* out, const QuantLayout& layout, std::uint16_t signs,
                           Stream s) {
  const std::int64_t total = layout.lines() * ((layout.length() + 15) / 16);
  if (total > 0) hadamardLinesKernel<<<gridFor(total), kBlock, 0, s>>>(Source{code, x}, layout, signs, out);
}

void launchQuantBlockScales(int code, const void* x, const QuantLayout& layout, const QuantKernelSpec& spec,
                            const unsigned int* tensorAmaxBits, float* blockAmax, std::uint8_t* scaleCodes,
                            float* scaleFactors, Stream s) {
  const std::int64_t blocks = layout.blockCount();
  if (spec.scaling == QuantScaling::PerTensor || blocks <= 0 || layout.rows * layout.cols == 0) return;
  constexpr int warps = kBlock / 32;
  const std::int64_t grid = std::min<std::int64_t>((blocks + warps - 1) / warps, 65535);
  blockScalesKernel<<<unsigned(grid), kBlock, 0, s>>>(Source{code, x}, layout, spec, tensorAmaxBits, blockAmax,
                                                       scaleCodes, scaleFactors);
}

void launchQuantElements(int code, const void* x, const QuantLayout& layout, const QuantKernelSpec& spec,
                         const unsigned int* tensorAmaxBits, const float* blockAmax, std::uint8_t* codes,
                         QuantStatsDevice* stats, unsigned int* amaxBits, Stream s) {
  const std::int64_t units = quantCodeBytes(layout.rows * layout.cols, spec.format);
  if (units <= 0) return;
  const ElementQuantizer z{Source{code, x}, layout, spec, blockAmax, 1.0f};
  elementsKernel<<<gridFor(units, 4096), kBlock, 0, s>>>(z, tensorAmaxBits, codes, stats, amaxBits);
}

void launchDequantize(const std::uint8_t* codes, const std::uint8_t* scaleCodes, const float* scaleFactors,
                      const QuantLayout& layout, QuantScaling scaling, MiniFormat format, float tensorScale,
                      float* out, Stream s) {
  const std::int64_t n = layout.rows * layout.cols;
  if (n <= 0) return;
  // QuantizedTensor::decoder()'s fields, 1 / scale rounded once here as there.
  const QuantDecoder decode{scaling, format, 1.0f / tensorScale, tensorScale};
  dequantizeKernel<<<gridFor(n, 4096), kBlock, 0, s>>>(codes, scaleCodes, scaleFactors, layout, decode, out);
}

void launchTransposeBytes(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst,
                          Stream s) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(unsigned((cols + 31) / 32), unsigned((rows + 31) / 32));
  transposeBytesKernel<<<grid, dim3(32, 8), 0, s>>>(src, rows, cols, dst);
}

}  // namespace amp::cuda
