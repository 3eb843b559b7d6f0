// Array conversions between fp32 and the 16-bit formats (fp16, bf16), bit-identical to the
// scalar functions in kernels/common/float16.h for every input (round to nearest even, overflow
// to inf, subnormals kept, NaN made quiet with sign and top payload kept).
//
// These run on hot paths (casts of whole tensors every step), so they pick the widest vector
// code the CPU has at run time: AVX-512 (F16C-style vcvtps2ph/vcvtph2ps on zmm, integer RNE for
// bf16), else AVX2+F16C, else the scalar code. The build stays portable (no -march flags); the
// vector code is compiled per function with __attribute__((target)).
//
// Single-threaded on purpose: callers (backends) already split tensors across their threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace amp {

void convertF32ToF16(const float* src, std::uint16_t* dst, std::size_t n);
void convertF16ToF32(const std::uint16_t* src, float* dst, std::size_t n);
void convertF32ToBf16(const float* src, std::uint16_t* dst, std::size_t n);
void convertBf16ToF32(const std::uint16_t* src, float* dst, std::size_t n);

// In place fp32 -> 16-bit -> fp32: the value an fp32 number keeps when stored in fp16/bf16
// (fp16/bf16 emulation computes in fp32 on inputs rounded like this).
void roundF32ThroughF16(float* data, std::size_t n);
void roundF32ThroughBf16(float* data, std::size_t n);

// Which implementation the functions above use. Ordered: a higher level needs more of the CPU.
enum class ConvertIsa : std::uint8_t { Scalar, Avx2F16c, Avx512 };

std::string_view convertIsaName(ConvertIsa isa);
// The value of AMP_CONVERT_ISA that selects a level ("scalar", "avx2", "avx512"). That variable,
// read once at the first conversion, caps the level (like oneDNN's ONEDNN_MAX_CPU_ISA).
std::string_view convertIsaEnvName(ConvertIsa isa);
// The best level this CPU supports (what is used unless setConvertIsa() chose otherwise).
ConvertIsa bestConvertIsa();
ConvertIsa activeConvertIsa();
// For tests and benchmarks: use `wanted`, or the best supported level if `wanted` needs more than
// this CPU has. Returns the level now in effect. Process-wide; not meant to race with conversions.
ConvertIsa setConvertIsa(ConvertIsa wanted);

}  // namespace amp
