// What the matmul and convolution wrappers share about oneDNN: one CPU engine, the per-thread
// scratch arena for staged (widened 16-bit) and reordered operands, the bf16 policy, and the
// translation of oneDNN's failures into messages a user can act on.
//
// bf16 without bf16 hardware: oneDNN 2.6 creates bf16 matmul and convolution primitives only on
// AVX-512 and up. Where it refuses (an AVX2-only CPU, or ONEDNN_MAX_CPU_ISA=AVX2), the wrappers
// run the same op as the fp16 path does: the bf16 operands widened exactly to fp32, an fp32
// primitive (fp32 products and sums), the output rounded once (RNE) to bf16. Which path a
// primitive takes is decided by what oneDNN accepts when it is created, never by CPU flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace dnnl {
struct engine;
}  // namespace dnnl

namespace amp::cpu {

// Element type of a matmul or convolution operand as stored in the caller's buffer. F16 is
// always computed in fp32 (oneDNN 2.6 has no CPU f16 matmul or convolution); BF16 natively
// where oneDNN accepts it, else in fp32 as well.
enum class ElemType : std::uint8_t { F32, BF16, F16 };

const char* elemTypeName(ElemType t);  // "fp32", "bf16", "fp16"
inline std::size_t elemSize(ElemType t) { return t == ElemType::F32 ? 4 : 2; }

dnnl::engine& cpuEngine();

// oneDNN's effective ISA on this machine as a user would name it: "AVX2", "AVX-512",
// "AVX512-BF16", "AMX", ... (after any ONEDNN_MAX_CPU_ISA cap).
std::string onednnIsaName();

// For tests and benchmarks: run bf16 through the fp32 emulation even where oneDNN has a bf16
// primitive, so both paths can be compared on one machine. Process-wide; primitives created
// under either setting are cached apart. Not meant to race with running GEMMs.
void setForceBf16Emulation(bool force);
bool forceBf16Emulation();

// Where a staged or reordered operand goes while a call runs: a per-thread buffer that grows to
// the largest call seen and never shrinks. 64-byte aligned offsets.
std::byte* scratchArena(std::size_t bytes);
inline std::size_t alignScratch(std::size_t n) { return (n + 63) / 64 * 64; }

// 16-bit <-> fp32 over whole operands, split across threads (exact, bit-identical to the scalar
// conversions of kernels/common/float16.h).
void widenToF32(ElemType t, const void* src, float* dst, std::size_t n);
void narrowFromF32(ElemType t, const float* src, void* dst, std::size_t n);

// A oneDNN failure that got past the wrappers' own fallbacks, said in one line: the op, the
// operand types, the shapes and this CPU's oneDNN ISA, then oneDNN's own words.
class ComputeLibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void throwComputeError(const std::string& op, const std::string& what,
                                    const char* libraryMessage);

}  // namespace amp::cpu
