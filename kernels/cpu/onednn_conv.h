// NCHW 2-D convolution through oneDNN (groups 1, dilation 1): forward, backward-data and
// backward-weights with the bias gradient. Products and sums in fp32, one rounding of each
// output to its type. bf16 runs natively where oneDNN has a bf16 convolution for this CPU
// (AVX-512 and up, native with AVX512-BF16 / AMX). oneDNN 2.6 has no CPU f16 convolution, and
// no bf16 one below AVX-512, so those are emulated exactly as the 16-bit GEMMs are: 16-bit
// inputs widened (exactly) to fp32, the fp32 convolution, outputs rounded once (RNE) to their
// type. Which path a primitive takes is decided by what oneDNN accepts when it is created. The
// conversions run here, multi-threaded, with our bit-exact converters (oneDNN's f16 reorder
// loses the sign of -0), so an emulated convolution costs about what fp32 does. Primitives are cached per shape and thread, as in
// onednn_matmul: creating one costs far more than running it.
//
// Callers' buffers are plain nchw (activations) and oihw (weights). Internally oneDNN may pick
// blocked layouts (nChw16c, OIhw16i16o, ...), for which we reorder on the way in and out; that
// is the default because it measured faster on AVX-512 (see tests/bench/bench_conv.cpp): the
// plain-layout fallback is a GEMM-based convolution ("gemm:jit"), 1.5-7x slower on the CNN's
// shapes. Reordered and staged (fp32 copies of emulated 16-bit operands) copies live in one per-thread scratch arena that grows to
// the largest call; convScratchBytes says how much of it a call uses, so the backend can count
// it as workspace while the call runs (oneDNN's own small scratchpads are not counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/common/conv_geometry.h"
#include "kernels/cpu/onednn_support.h"

namespace amp::cpu {

// Element type of a convolution operand (see onednn_support.h: F16 is always computed in fp32,
// BF16 where oneDNN has no bf16 convolution).
using ConvType = ElemType;

using ConvShape = ConvGeometry;

enum class ConvPass : std::uint8_t { Forward, BackwardData, BackwardWeights };

// How the primitive's own tensors are laid out. Auto lets oneDNN choose (format_tag::any) and
// reorders to and from the callers' plain buffers; Plain runs directly on nchw/oihw.
enum class ConvLayout : std::uint8_t { Auto, Plain };
// Process-wide, for benchmarks and tests; not meant to race with running convolutions.
void setConvLayout(ConvLayout layout);

// dst (N,K,OH,OW) = conv(src (N,C,H,W), wei (K,C,R,S)) [+ bias (K)]. src, wei and bias of type
// `in`; dst of type `out` (`in` or F32).
void convForward(ConvType in, ConvType out, const ConvShape& s, const void* src, const void* wei,
                 const void* bias, void* dst);
// diffSrc (N,C,H,W) of type `out` from diffDst (N,K,OH,OW) and wei (K,C,R,S) of type `in`.
void convBackwardData(ConvType in, ConvType out, const ConvShape& s, const void* diffDst,
                      const void* wei, void* diffSrc);
// diffWei (K,C,R,S) and, when not null, diffBias (K), both of type `out`, from src and diffDst
// of type `in`.
void convBackwardWeights(ConvType in, ConvType out, const ConvShape& s, const void* src,
                         const void* diffDst, void* diffWei, void* diffBias);

// Both backward passes of one convolution: diffWei (and diffBias when not null) of type
// `outWeights`, then, when diffSrc is not null, diffSrc of type `outData`. The output gradient is
// reordered (or widened, when emulated) once for both instead of once per pass; the results are
// those of convBackwardWeights and convBackwardData.
void convBackward(ConvType in, ConvType outData, ConvType outWeights, const ConvShape& s,
                  const void* src, const void* diffDst, const void* wei, void* diffSrc,
                  void* diffWei, void* diffBias);
std::size_t convBackwardScratchBytes(ConvType in, ConvType outData, ConvType outWeights,
                                     const ConvShape& s, bool bias, bool data);

// Bytes of the scratch arena one call of this pass uses (blocked-layout copies, and fp32 copies of
// emulated 16-bit operands).
std::size_t convScratchBytes(ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
                             bool bias);

// The oneDNN implementation chosen for a pass ("jit:avx512_core", "brgconv:avx512_core_bf16",
// "jit:avx2 (bf16 emulated: ...)"), for the benchmark report and the UI.
std::string convImplementation(ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
                               bool bias);
// Whether a pass computes in its own 16-bit type (false: widened to fp32, or fp32 itself).
bool convIsNative16(ConvPass pass, ConvType in, ConvType out, const ConvShape& s, bool bias);

}  // namespace amp::cpu
