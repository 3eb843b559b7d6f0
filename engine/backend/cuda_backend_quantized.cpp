// CUDA backend: fp8 / block-scaled GEMM operands made, decoded and multiplied on the device.
// quantize runs kernels/cuda/fp8_quantize.cu (block amaxes and scales, then codes, statistics and
// the tensor's amax in one pass); the per-element code is kernels/common's, so the codes and scales are the host
// reference's bit for bit (tests/gpu/test_fp8_cuda.cpp). gemmQuantized multiplies per-tensor fp8
// operands on the fp8 tensor cores through cuBLASLt where the device has them (sm_89 and up),
// MXFP8 and NVFP4 operands on the block-scaled tensor cores of sm_100 and up (their scales tiled
// as cuBLASLt wants them, kernels/cuda/fp8_block_scales.cu; the route and every reason it
// refuses one in kernels/cuda/fp8_gemm_route.h), and dequantises everything else into fp32 for
// the fp32 GEMM.
//
// What still goes to the host: NVFP4's tensor scale S (QuantizedTensor::tensorScale is a host
// float: one 4-byte read after the amax kernel) and, when statistics are asked for, the sums and
// the block scales for the block-exponent histogram. Neither can be recorded in a CUDA graph
// (scratch and download refuse while capturing, naming the op).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"
#include "engine/backend/cuda_fast_paths.h"
#include "kernels/common/block_scale_tiles.h"
#include "kernels/cuda/fp8_gemm_route.h"
#include "kernels/cuda/fp8_kernels.h"

namespace amp {

using cudabk::floatCode;

namespace {

cuda::QuantKernelSpec kernelSpec(const QuantSpec& s) {
  cuda::QuantKernelSpec k;
  k.scaling = s.scaling;
  k.format = s.format;
  k.overflow = s.overflow;
  k.tensorScale = s.tensorScale;
  k.mxRounding = s.mxRounding;
  k.powerOfTwo = s.powerOfTwo;
  k.stochastic = s.stochastic;
  k.seed = s.seed;
  k.hadamard = s.hadamard;
  k.hadamardSigns = s.hadamardSigns;
  return k;
}

// The device results a quantisation reads back (one allocation, zeroed on the stream).
struct QuantResults {
  unsigned int xAmaxBits;    // amax of x (the statistics' amax)
  unsigned int srcAmaxBits;  // amax of what is quantised (NVFP4: after the transform): S from it
  unsigned int pad[2];
  cuda::QuantStatsDevice stats;
};

// QuantStats::blockExponents from the stored scales, as engine/amp/fp8_quantize.cpp counts them.
void countBlockExponents(const QuantSpec& spec, const std::vector<std::uint8_t>& scaleCodes,
                         const std::vector<float>& blockAmax, QuantStats& stats) {
  switch (spec.scaling) {
    case QuantScaling::Mx:
      for (std::uint8_t code : scaleCodes)
        if (code != kE8m0Nan) ++stats.blockExponents[int(code) - 127];
      return;
    case QuantScaling::Blockwise:
      for (float amax : blockAmax)
        if (amax > 0 && std::isfinite(amax))
          ++stats.blockExponents[floorLog2(blockwiseScale(amax, miniMax(spec.format), spec.powerOfTwo))];
      return;
    case QuantScaling::Nvfp4:
      for (std::uint8_t code : scaleCodes) {
        const float sb = miniToFloat(code, MiniFormat::E4M3);
        if (sb > 0) ++stats.blockExponents[floorLog2(sb)];
      }
      return;
    case QuantScaling::PerTensor: return;
  }
}

struct QuantGemmDims {
  std::int64_t m, n, k;
};

// op(a) (m, k) . op(b) (k, n) into c (m, n), F32 or BF16, bias F32 (n): checked as Backend's
// default checks them, so both backends refuse the same calls.
QuantGemmDims checkQuantGemm(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB,
                             const Tensor& c, const Tensor* bias) {
  if (!a.defined() || !b.defined()) throw std::invalid_argument("gemmQuantized: an operand is not quantised");
  const QuantGemmDims d{transA ? a.cols : a.rows, transB ? b.rows : b.cols, transA ? a.rows : a.cols};
  const std::int64_t kb = transB ? b.cols : b.rows;
  if (d.k != kb || c.numel() != d.m * d.n || (c.dtype() != DType::F32 && c.dtype() != DType::BF16) ||
      (bias && (bias->dtype() != DType::F32 || bias->numel() != d.n)))
    throw std::invalid_argument("gemmQuantized: (" + std::to_string(d.m) + " x " + std::to_string(d.k) + ") . (" +
                                std::to_string(kb) + " x " + std::to_string(d.n) + ") into " +
                                cudabk::shapes({&c, bias}) + " (c F32 or BF16 of m x n, bias F32 of n)");
  return d;
}

bool isFp8Format(MiniFormat f) { return f == MiniFormat::E4M3 || f == MiniFormat::E5M2; }

cuda::QuantOperandInfo operandInfo(const QuantizedTensor& q) {
  return cuda::QuantOperandInfo{q.spec.scaling, q.spec.format, q.spec.block, q.spec.square, q.spec.alongRows};
}

const char* const kFp8Path = "fp8 tensor cores (cuBLASLt)";
const char* const kMxfp8Path = "block-scaled fp8 tensor cores (cuBLASLt VEC32_UE8M0: MXFP8)";
const char* const kNvfp4Path = "block-scaled fp4 tensor cores (cuBLASLt VEC16_UE4M3: NVFP4)";

// A block-scaled shape cuBLASLt refused, whatever the output type (the same operands then fall
// back for either output).
std::string refusalKey(cuda::Fp8GemmShape s) {
  s.outCode = 0;
  return s.text();
}

}  // namespace

float CudaBackend::amax(const Tensor& x) {
  if (!cudabk::fastPathEnabled("fp8-quantize")) return Backend::amax(x);
  useDevice();
  auto* bits = static_cast<unsigned int*>(scratch(sizeof(unsigned int)));
  cuda::launchAmaxBits(floatCode(x, "amax"), x.rawData(), x.numel(), bits, m_stream);
  checkLaunch("amax", cudabk::shapes({&x}));
  unsigned int host = 0;
  download(&host, bits, sizeof host, "amax");
  return bitsToFloat(host);
}

void CudaBackend::quantize(const Tensor& x, std::int64_t cols, const QuantSpec& spec, QuantizedTensor& q,
                           MemCategory cat, QuantStats* stats) {
  if (!cudabk::fastPathEnabled("fp8-quantize")) return Backend::quantize(x, cols, spec, q, cat, stats);
  useDevice();
  const int code = floatCode(x, "quantize");
  const std::int64_t n = x.numel();
  // Backend's default refuses the same shapes (backend_quantized.cpp).
  if (cols <= 0 || n % cols != 0)
    throw std::invalid_argument("quantize: " + std::to_string(n) + " values are not rows of " + std::to_string(cols));
  if (spec.scaling != QuantScaling::PerTensor && spec.block <= 0)
    throw std::invalid_argument("quantize: block size " + std::to_string(spec.block));
  // The host reference's NVFP4 blocks are 16 whatever spec.block says; the kernels follow the
  // layout (spec.block), so anything else would not be the same operand.
  if (spec.scaling == QuantScaling::Nvfp4 && spec.block != 16)
    throw std::invalid_argument("quantize: NVFP4 blocks are 16 values, not " + std::to_string(spec.block));
  // q's tensors are kept when they already fit (a layer quantises the same shapes every step).
  allocateQuantized(*this, q, n / cols, cols, spec, cat);
  const QuantLayout L = q.layout();
  const cuda::QuantKernelSpec ks = kernelSpec(spec);
  const bool blocks = spec.scaling != QuantScaling::PerTensor;
  const bool blockwise = spec.scaling == QuantScaling::Blockwise, nvfp4 = spec.scaling == QuantScaling::Nvfp4;

  // Device scratch of our own (not scratch(): a quantisation without statistics must stay
  // recordable in a graph, and these tensors outlive the launches on the stream).
  Tensor results = empty({std::int64_t(sizeof(QuantResults))}, DType::U8, MemCategory::Workspace);
  checkCuda(cudaMemsetAsync(results.rawData(), 0, sizeof(QuantResults), m_stream), "quantize", "clear results");
  auto* dev = static_cast<QuantResults*>(results.rawData());
  Tensor blockAmax = blocks ? empty({L.blockCount()}, DType::F32, MemCategory::Workspace) : Tensor();

  const void* src = x.rawData();
  int srcCode = code;
  Tensor transformed;
  if (nvfp4 && spec.hadamard && n > 0) {  // the transform first: S comes from what is multiplied
    transformed = empty({n}, DType::F32, MemCategory::Workspace);
    cuda::launchHadamard16Lines(code, x.rawData(), transformed.data<float>(), L, spec.hadamardSigns, m_stream);
    src = transformed.rawData();
    srcCode = 0;
  }
  if (nvfp4) cuda::launchAmaxBits(srcCode, src, n, &dev->srcAmaxBits, m_stream);
  // The statistics' amax is x's: written by the element pass where it reads x itself (every
  // recipe but NVFP4, whose S already needed it first), by a pass of its own after a transform.
  const bool transformedSrc = transformed.defined();
  if (stats && transformedSrc) cuda::launchAmaxBits(code, x.rawData(), n, &dev->xAmaxBits, m_stream);
  std::uint8_t* scaleCodes = blocks && !blockwise ? q.blockScales.data<std::uint8_t>() : nullptr;
  float* scaleFactors = blockwise ? q.blockScales.data<float>() : nullptr;
  cuda::launchQuantBlockScales(srcCode, src, L, ks, &dev->srcAmaxBits, blocks ? blockAmax.data<float>() : nullptr,
                               scaleCodes, scaleFactors, m_stream);
  cuda::launchQuantElements(srcCode, src, L, ks, &dev->srcAmaxBits, blocks ? blockAmax.data<float>() : nullptr,
                            q.codes.data<std::uint8_t>(), stats ? &dev->stats : nullptr,
                            stats && !nvfp4 ? &dev->xAmaxBits : nullptr, m_stream);
  checkLaunch("quantize", cudabk::shapes({&x}) + " as " + std::to_string(q.rows) + " x " + std::to_string(cols));

  q.tensorScale = spec.scaling == QuantScaling::PerTensor ? spec.tensorScale : 1.0f;
  QuantResults host{};
  if (nvfp4 || stats) download(&host, dev, sizeof host, "quantize results");
  if (nvfp4) q.tensorScale = nvfp4TensorScale(bitsToFloat(host.srcAmaxBits));  // the kernels' S
  if (!stats) return;
  *stats = QuantStats{};
  stats->amax = bitsToFloat(nvfp4 && !transformedSrc ? host.srcAmaxBits : host.xAmaxBits);
  stats->scale = spec.scaling == QuantScaling::PerTensor || nvfp4 ? q.tensorScale : 1.0f;
  stats->count = std::int64_t(host.stats.count);
  stats->nonzero = std::int64_t(host.stats.nonzero);
  stats->underflow = std::int64_t(host.stats.underflow);
  stats->overflow = std::int64_t(host.stats.overflow);
  stats->nonFinite = std::int64_t(host.stats.nonFinite);
  stats->signalSq = host.stats.signalSq;
  stats->errorSq = host.stats.errorSq;
  if (!blocks) return;
  std::vector<std::uint8_t> codes;
  std::vector<float> amaxes;
  if (blockwise) amaxes = toHostFloat(blockAmax);
  else codes = toHostBytes(q.blockScales);
  countBlockExponents(spec, codes, amaxes, *stats);
}

void CudaBackend::dequantize(const QuantizedTensor& q, Tensor& out) {
  if (!cudabk::fastPathEnabled("fp8-quantize")) return Backend::dequantize(q, out);
  useDevice();
  if (out.dtype() != DType::F32 || out.numel() != q.rows * q.cols)
    throw std::invalid_argument("dequantize: " + std::to_string(q.rows) + " x " + std::to_string(q.cols) + " into " +
                                cudabk::shapes({&out}) + " (F32 of as many values)");
  const bool blockwise = q.spec.scaling == QuantScaling::Blockwise;
  const bool coded = q.spec.scaling == QuantScaling::Mx || q.spec.scaling == QuantScaling::Nvfp4;
  cuda::launchDequantize(q.codes.data<std::uint8_t>(), coded ? q.blockScales.data<std::uint8_t>() : nullptr,
                         blockwise ? q.blockScales.data<float>() : nullptr, q.layout(), q.spec.scaling, q.spec.format,
                         q.tensorScale, out.data<float>(), m_stream);
  checkLaunch("dequantize", cudabk::shapes({&out}));
}

std::string CudaBackend::quantizedGemmPath(const QuantizedTensor& a, bool transA, const QuantizedTensor& b,
                                           bool transB, DType out) const {
  if (!cudabk::fastPathEnabled("fp8-gemm")) return "dequantised fp32 GEMM: AMP_CUDA_DISABLE=fp8-gemm";
  const std::int64_t m = transA ? a.cols : a.rows, n = transB ? b.rows : b.cols, k = transA ? a.rows : a.cols;
  if (a.spec.scaling != QuantScaling::PerTensor || b.spec.scaling != QuantScaling::PerTensor) {
    const cuda::BlockGemmRoute r = cuda::routeBlockScaledGemm(operandInfo(a), transA, operandInfo(b), transB, m, n, k,
                                                              m_ccMajor, m_ccMinor,
                                                              cudabk::fastPathEnabled("fp8-block-gemm"));
    if (!r.taken()) return "dequantised fp32 GEMM: " + r.refusal;
    cuda::Fp8GemmShape s{m, n, k, a.spec.format, b.spec.format, out == DType::F32 ? 0 : 2, false, r.scaling};
    // A shape cuBLASLt turned down when the GEMM first ran (gemmQuantizedWith) stays down.
    const auto refused = m_blockGemmRefusals.find(refusalKey(s));
    if (refused != m_blockGemmRefusals.end()) return "dequantised fp32 GEMM: " + refused->second;
    return r.scaling == cuda::Fp8GemmScaling::Mxfp8 ? kMxfp8Path : kNvfp4Path;
  }
  if (m_ccMajor * 10 + m_ccMinor < 89)
    return "dequantised fp32 GEMM: sm_" + std::to_string(m_ccMajor) + std::to_string(m_ccMinor) +
           " has no fp8 tensor cores (sm_89 and up)";
  cuda::Fp8GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.aFormat = a.spec.format;
  s.bFormat = b.spec.format;
  s.outCode = out == DType::F32 ? 0 : out == DType::BF16 ? 2 : 1;
  if (!isFp8Format(s.aFormat) || !isFp8Format(s.bFormat))
    return "dequantised fp32 GEMM: not fp8 operands";
  if (!cuda::fp8GemmSupported(s))
    return "dequantised fp32 GEMM: " + s.text() + " (cuBLASLt's fp8 needs m, n, k multiples of 16, not e5m2 x e5m2)";
  return kFp8Path;
}

void CudaBackend::gemmQuantized(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB,
                                Tensor& c, const Tensor* bias) {
  // Linear's forward is the only GEMM of this layout (see cuda_backend.h).
  gemmQuantizedWith(a, transA, b, transB, c, bias, !transA && transB);
}

void CudaBackend::gemmQuantizedWith(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB,
                                    Tensor& c, const Tensor* bias, bool fastAccumulation, unsigned int* dAmaxBits) {
  useDevice();
  const QuantGemmDims d = checkQuantGemm(a, transA, b, transB, c, bias);
  std::string path = quantizedGemmPath(a, transA, b, transB, c.dtype());
  const bool mxfp8 = path == kMxfp8Path, nvfp4 = path == kNvfp4Path;
  bool tensorCores = mxfp8 || nvfp4 || path == kFp8Path;
  const cuda::Fp8GemmScaling scaling = mxfp8 ? cuda::Fp8GemmScaling::Mxfp8
                                       : nvfp4 ? cuda::Fp8GemmScaling::Nvfp4
                                               : cuda::Fp8GemmScaling::PerTensor;
  // The block-scaled path is the first to meet a new shape on a new GPU generation: where
  // cuBLASLt has no algorithm for it, the GEMM falls back (and the path says why from then on)
  // instead of failing the step.
  const bool bf16Direct = c.dtype() == DType::BF16 && !bias;
  cuda::Fp8GemmShape s{d.m, d.n, d.k, a.spec.format, b.spec.format, bf16Direct ? 2 : 0,
                       fastAccumulation && scaling == cuda::Fp8GemmScaling::PerTensor, scaling};
  if (tensorCores && !m_fp8Gemm) {
    m_fp8Gemm = std::make_unique<cuda::CublasLtFp8Gemm>();
    m_memory.onAlloc(MemCategory::Workspace, static_cast<std::int64_t>(m_fp8Gemm->workspaceBytes()));
  }
  std::string why;
  if ((mxfp8 || nvfp4) && !m_fp8Gemm->prepare(s, &why)) {
    m_blockGemmRefusals[refusalKey(s)] = cuda::joined("cuBLASLt has no block-scaled algorithm for ", s.text(), " (", why, ")");
    path = quantizedGemmPath(a, transA, b, transB, c.dtype());
    tensorCores = false;
  }
  // A bf16 output with a bias, or from the fp32 fallback (cuBLASLt takes no fp32 x fp32 -> bf16):
  // the sum in fp32 first, the bias added, one rounding (the cast).
  const bool widen = c.dtype() == DType::BF16 && (bias || !tensorCores);
  Tensor wide = widen ? empty({d.m, d.n}, DType::F32, MemCategory::Workspace) : Tensor();
  Tensor& target = wide.defined() ? wide : c;

  if (tensorCores) {
    // The TN layout: a as (m, k) and b as (n, k), K contiguous in both; transposed copies of
    // the codes where the operand lies the other way (exact: a per-tensor scale does not move,
    // and a block's scale is indexed by (line, block along K), the same either way).
    const bool fp4 = a.spec.format == MiniFormat::E2M1;
    const auto kContiguous = [&](const QuantizedTensor& q, bool transpose, Tensor& copy) {
      const std::uint8_t* codes = q.codes.data<std::uint8_t>();
      if (!transpose) return codes;
      copy = empty({quantCodeBytes(q.rows * q.cols, q.spec.format)}, DType::U8, MemCategory::Workspace);
      if (fp4) cuda::launchTransposeNibbles(codes, q.rows, q.cols, copy.data<std::uint8_t>(), m_stream);
      else cuda::launchTransposeBytes(codes, q.rows, q.cols, copy.data<std::uint8_t>(), m_stream);
      return static_cast<const std::uint8_t*>(copy.data<std::uint8_t>());
    };
    Tensor aT, bT, aTiles, bTiles, inv;
    const std::uint8_t* aCodes = kContiguous(a, transA, aT);
    const std::uint8_t* bCodes = kContiguous(b, !transB, bT);
    const void* aScale = nullptr;
    const void* bScale = nullptr;
    float alpha = 1.0f;
    if (scaling == cuda::Fp8GemmScaling::PerTensor) {
      // 1 / scale on the device for cuBLASLt's scale pointers (a fill, so a graph records it).
      inv = empty({2}, DType::F32, MemCategory::Workspace);
      cuda::launchFill(0, inv.data<float>(), 1, 1.0f / a.tensorScale, m_stream);
      cuda::launchFill(0, inv.data<float>() + 1, 1, 1.0f / b.tensorScale, m_stream);
      aScale = inv.data<float>();
      bScale = inv.data<float>() + 1;
    } else {
      const auto tiles = [&](const QuantizedTensor& q, Tensor& t) {
        const QuantLayout L = q.layout();
        t = empty({blockScaleTilesOf(L).bytes()}, DType::U8, MemCategory::Workspace);
        cuda::launchTileBlockScales(q.blockScales.data<std::uint8_t>(), L, t.data<std::uint8_t>(), m_stream);
        return static_cast<const void*>(t.data<std::uint8_t>());
      };
      aScale = tiles(a, aTiles);
      bScale = tiles(b, bTiles);
      // NVFP4 decodes as e2m1 x s_block / S: the block scales are the tiles', the two tensor
      // scales are left for alpha (the scale pointers are taken). 1 / (S_a S_b) rounded once
      // (the double product of two floats is exact).
      if (nvfp4) alpha = static_cast<float>(1.0 / (double(a.tensorScale) * double(b.tensorScale)));
    }
    checkLaunch("fp8 gemm operands", s.text());
    timeInGemmCounters(2.0 * double(d.m) * double(d.n) * double(d.k), [&] {
      m_fp8Gemm->run(s, aCodes, aScale, bCodes, bScale, target.rawData(), m_stream, alpha);
    });
  } else {
    if (!m_fp8FallbackSaid) {
      std::fprintf(stderr, "[amp cuda] quantised GEMMs: %s\n", path.c_str());
      m_fp8FallbackSaid = true;
    }
    Tensor a32 = empty({a.rows, a.cols}, DType::F32, MemCategory::Workspace);
    Tensor b32 = empty({b.rows, b.cols}, DType::F32, MemCategory::Workspace);
    dequantize(a, a32);
    dequantize(b, b32);
    // The decoded values multiplied exactly and summed in fp32: TF32 off whatever backend.tf32.
    cuda::GemmShape gs = gemmShape(d.m, d.n, d.k, transA, transB, a32, target, "gemmQuantized");
    gs.tf32 = false;
    timeInGemmCounters(2.0 * double(d.m) * double(d.n) * double(d.k), [&] {
      m_gemm->run(gs, a32.rawData(), b32.rawData(), nullptr, target.rawData(), m_stream);
    });
  }
  if (bias) {
    cuda::launchBiasAdd(0, bias->rawData(), target.data<float>(), d.m, d.n, m_stream);
    checkLaunch("gemmQuantized bias", cudabk::shapes({bias, &target}));
  }
  if (wide.defined()) {
    cuda::launchCast(0, wide.rawData(), 2, c.rawData(), wide.numel(), m_stream);
    checkLaunch("gemmQuantized output", cudabk::shapes({&c}));
  }
  // D's amax, of the output as stored (bias added, rounded to c's dtype). cuBLASLt's
  // AMAX_D_POINTER would do it inside the GEMM, but only for an fp8 D (cublaslt_fp8_gemm.h):
  // every output here is fp32 or bf16, so it is always our amax kernel, on the stream behind
  // the GEMM (no host wait).
  if (dAmaxBits) {
    static_assert(!cuda::cublasLtWritesAmaxD(0) && !cuda::cublasLtWritesAmaxD(2), "see above");
    checkCuda(cudaMemsetAsync(dAmaxBits, 0, sizeof *dAmaxBits, m_stream), "gemmQuantized", "clear D amax");
    cuda::launchAmaxBits(floatCode(c, "gemmQuantized"), c.rawData(), c.numel(), dAmaxBits, m_stream);
    checkLaunch("gemmQuantized D amax", cudabk::shapes({&c}));
  }
}

}  // namespace amp
