// CpuBackend's fp8 / block-scaled operand ops: engine/amp/fp8_quantize.h's host reference run on
// the tensors where they are (the defaults copy through toHostFloat / uploadBytes), so the codes
// are written once into the operand's own bytes and decoded straight into the GEMM's fp32 input.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/chunked.h"
#include "kernels/cpu/convert.h"

namespace amp {

namespace {

// x's values as fp32: its own memory when it is fp32, else widened (exactly) into `scratch`.
const float* floatsOf(const Tensor& x, std::vector<float>& scratch) {
  if (x.dtype() == DType::F32) return x.data<float>();
  if (x.dtype() != DType::BF16 && x.dtype() != DType::F16)
    throw std::invalid_argument("quantize: a " + std::string(dtypeName(x.dtype())) + " tensor has no float values");
  scratch.resize(static_cast<std::size_t>(x.numel()));
  const auto* in = x.data<std::uint16_t>();
  const bool bf16 = x.dtype() == DType::BF16;
  cpu::forEachChunk(x.numel(), [&](std::int64_t b, std::int64_t len) {
    if (bf16) convertBf16ToF32(in + b, scratch.data() + b, static_cast<std::size_t>(len));
    else convertF16ToF32(in + b, scratch.data() + b, static_cast<std::size_t>(len));
  });
  return scratch.data();
}

}  // namespace

float CpuBackend::amax(const Tensor& x) {
  std::vector<float> scratch;
  return amaxOf(floatsOf(x, scratch), x.numel());
}

void CpuBackend::quantize(const Tensor& x, std::int64_t cols, const QuantSpec& spec, QuantizedTensor& q,
                          MemCategory cat, QuantStats* stats) {
  if (cols <= 0 || x.numel() % cols != 0)
    throw std::invalid_argument("quantize: " + std::to_string(x.numel()) + " values are not rows of " +
                                std::to_string(cols));
  const std::int64_t rows = x.numel() / cols;
  allocateQuantized(*this, q, rows, cols, spec, cat);
  std::vector<float> scratch;
  const float* src = floatsOf(x, scratch);
  std::uint8_t* scaleCodes = nullptr;
  float* scaleFactors = nullptr;
  if (spec.scaling == QuantScaling::Blockwise) scaleFactors = q.blockScales.data<float>();
  else if (spec.scaling != QuantScaling::PerTensor) scaleCodes = q.blockScales.data<std::uint8_t>();
  quantizeToCodes(src, rows, cols, spec, q.codes.data<std::uint8_t>(), scaleCodes, scaleFactors, &q.tensorScale,
                  stats);
}

void CpuBackend::dequantize(const QuantizedTensor& q, Tensor& out) {
  if (out.numel() != q.rows * q.cols || out.dtype() != DType::F32)
    throw std::invalid_argument("dequantize: an F32 output of " + std::to_string(q.rows * q.cols) + " values");
  const bool codesScale = q.spec.scaling == QuantScaling::Mx || q.spec.scaling == QuantScaling::Nvfp4;
  decodeCodes(q.codes.data<std::uint8_t>(), codesScale ? q.blockScales.data<std::uint8_t>() : nullptr,
              q.spec.scaling == QuantScaling::Blockwise ? q.blockScales.data<float>() : nullptr, q.tensorScale, q.rows,
              q.cols, q.spec, out.data<float>());
}

}  // namespace amp
