// CPU backend: what runs natively and what is emulated, decided by asking oneDNN (creating a
// small bf16 matmul and convolution, as training will) rather than by guessing from CPU flags.
// fp32 is native everywhere; fp16 is always an exact emulation (oneDNN 2.6 has no CPU f16
// matmul or convolution); bf16 is native where oneDNN has bf16 primitives (AVX-512 and up:
// natively with AVX512-BF16 or AMX instructions) and an exact emulation elsewhere (AVX2-only
// CPUs: fp32 math on bf16 values, the output rounded once to bf16).
#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_matmul.h"

namespace amp {

namespace {

// Whether oneDNN takes bf16 matmuls and convolutions on this CPU (and under the current
// emulation setting). Probed with small shapes; the primitives land in the calling thread's
// cache, which training on that thread would have filled anyway.
bool bf16Native() {
  const cpu::MatmulShape mm{16, 16, 16, false, true};
  ConvGeometry conv;
  conv.n = 1, conv.c = 4, conv.h = 8, conv.w = 8, conv.k = 8, conv.r = 3, conv.s = 3;
  conv.padH = conv.padW = 1;
  return cpu::matmulIsNative16(cpu::ElemType::BF16, cpu::ElemType::F32, mm, false) &&
         cpu::convIsNative16(cpu::ConvPass::Forward, cpu::ElemType::BF16, cpu::ElemType::BF16, conv,
                             false);
}


// bf16 instructions that oneDNN uses (an AVX-512 CPU without them still gets oneDNN's bf16
// kernels, which convert in software).
bool bf16Instructions(const std::string& isa) { return isa == "AMX" || isa == "AVX512-BF16"; }

}  // namespace

bool CpuBackend::nativeCompute(DType dtype) const {
  if (dtype == DType::F16) return false;
  if (dtype == DType::BF16) return bf16Native() && bf16Instructions(cpu::onednnIsaName());
  return true;
}

std::string CpuBackend::computePath(DType dtype) const {
  const std::string isa = cpu::onednnIsaName();
  switch (dtype) {
    case DType::F16:
      return "emulated (fp32 math on fp16 values; oneDNN has no CPU fp16 kernels)";
    case DType::BF16:
      if (!bf16Native())
        return cpu::forceBf16Emulation()
                   ? "emulated (fp32 math on bf16 values; emulation forced)"
                   : "emulated (fp32 math on bf16 values; no bf16 kernels for " + isa + " in oneDNN)";
      if (bf16Instructions(isa)) return "native (oneDNN, " + isa + ")";
      return "emulated by oneDNN's " + isa + " kernels (bf16 converted in software: no bf16 "
             "instructions on this CPU)";
    default:
      return "native (oneDNN, " + isa + ")";
  }
}

std::string CpuBackend::description() const {
  return "CPU (oneDNN ISA " + cpu::onednnIsaName() + "): fp32 native; bf16 " +
         computePath(DType::BF16) + "; fp16 " + computePath(DType::F16) +
         "; emulation is exact: each output rounded once to its dtype";
}

}  // namespace amp
