// The fp8 / block-scaled operand ops' default implementations: engine/amp/fp8_quantize.h's host
// reference over copies (toHostFloat, uploadBytes). Correct on any backend; the CPU backend
// overrides them to read and write its tensors in place, the CUDA backend with kernels.
#include <stdexcept>
#include <string>

#include "engine/backend/backend.h"

namespace amp {

namespace {

void checkOperand(const Tensor& x, std::int64_t cols, const char* op) {
  if (cols <= 0 || x.numel() % cols != 0)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(x.numel()) + " values are not rows of " +
                                std::to_string(cols));
}

}  // namespace

float Backend::amax(const Tensor& x) {
  const std::vector<float> v = toHostFloat(x);
  return amaxOf(v.data(), static_cast<std::int64_t>(v.size()));
}

void allocateQuantized(Backend& be, QuantizedTensor& q, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                       MemCategory cat) {
  q.spec = spec;
  q.rows = rows;
  q.cols = cols;
  const auto codeBytes = quantCodeBytes(rows * cols, spec.format);
  if (!q.codes.defined() || q.codes.numel() != codeBytes || q.codes.category() != cat)
    q.codes = be.empty({codeBytes}, DType::U8, cat);
  if (spec.scaling == QuantScaling::PerTensor) {
    q.blockScales = Tensor();
    return;
  }
  const std::int64_t blocks = q.layout().blockCount();
  const DType dt = spec.scaling == QuantScaling::Blockwise ? DType::F32 : DType::U8;
  if (!q.blockScales.defined() || q.blockScales.numel() != blocks || q.blockScales.dtype() != dt ||
      q.blockScales.category() != cat)
    q.blockScales = be.empty({blocks}, dt, cat);
}

void Backend::quantize(const Tensor& x, std::int64_t cols, const QuantSpec& spec, QuantizedTensor& q,
                       MemCategory cat, QuantStats* stats) {
  checkOperand(x, cols, "quantize");
  const std::int64_t rows = x.numel() / cols;
  allocateQuantized(*this, q, rows, cols, spec, cat);
  const std::vector<float> v = toHostFloat(x);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(q.codes.numel()));
  const std::int64_t blocks = spec.scaling == QuantScaling::PerTensor ? 0 : q.layout().blockCount();
  std::vector<std::uint8_t> scaleCodes(spec.scaling == QuantScaling::Blockwise ? 0 : std::size_t(blocks));
  std::vector<float> scaleFactors(spec.scaling == QuantScaling::Blockwise ? std::size_t(blocks) : 0);
  quantizeToCodes(v.data(), rows, cols, spec, codes.data(), scaleCodes.data(), scaleFactors.data(), &q.tensorScale,
                  stats);
  uploadBytes(q.codes, codes);
  if (spec.scaling == QuantScaling::Blockwise) uploadFloat(q.blockScales, scaleFactors);
  else if (blocks) uploadBytes(q.blockScales, scaleCodes);
}

void Backend::dequantize(const QuantizedTensor& q, Tensor& out) {
  if (out.numel() != q.rows * q.cols)
    throw std::invalid_argument("dequantize: output of " + std::to_string(out.numel()) + " values for " +
                                std::to_string(q.rows) + " x " + std::to_string(q.cols));
  const std::vector<std::uint8_t> codes = toHostBytes(q.codes);
  std::vector<std::uint8_t> scaleCodes;
  std::vector<float> scaleFactors;
  if (q.spec.scaling == QuantScaling::Blockwise) scaleFactors = toHostFloat(q.blockScales);
  else if (q.spec.scaling != QuantScaling::PerTensor) scaleCodes = toHostBytes(q.blockScales);
  std::vector<float> values(static_cast<std::size_t>(q.rows * q.cols));
  decodeCodes(codes.data(), scaleCodes.data(), scaleFactors.data(), q.tensorScale, q.rows, q.cols, q.spec,
              values.data());
  uploadFloat(out, values);
}

void Backend::gemmQuantized(const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB, Tensor& c,
                            const Tensor* bias) {
  // Decoded to fp32 (exact) and multiplied in fp32: the products of fp8 values are exact in
  // fp32, so this is the quantised GEMM up to the order of the fp32 additions.
  Tensor da = empty({a.rows, a.cols}, DType::F32, MemCategory::Workspace);
  Tensor db = empty({b.rows, b.cols}, DType::F32, MemCategory::Workspace);
  dequantize(a, da);
  dequantize(b, db);
  gemm(da, transA, db, transB, c, bias);
}

}  // namespace amp
