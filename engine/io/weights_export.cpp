#include "engine/io/weights_export.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/convert.h"

namespace amp {

namespace {

bool isFloat(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

// A float tensor's values widened exactly to fp32.
std::vector<float> widened(const SafeTensor& t) {
  const std::size_t n = static_cast<std::size_t>(shapeNumel(t.shape));
  std::vector<float> v(n);
  if (t.dtype == DType::F32) {
    std::memcpy(v.data(), t.data.constData(), n * 4);
  } else {
    std::vector<std::uint16_t> bits(n);
    std::memcpy(bits.data(), t.data.constData(), n * 2);
    if (t.dtype == DType::F16) convertF16ToF32(bits.data(), v.data(), n);
    else convertBf16ToF32(bits.data(), v.data(), n);
  }
  return v;
}

QByteArray narrowed(const std::vector<float>& v, DType dtype) {
  if (dtype == DType::F32)
    return QByteArray(reinterpret_cast<const char*>(v.data()), qsizetype(v.size() * 4));
  std::vector<std::uint16_t> bits(v.size());
  if (dtype == DType::F16) convertF32ToF16(v.data(), bits.data(), v.size());
  else convertF32ToBf16(v.data(), bits.data(), v.size());
  return QByteArray(reinterpret_cast<const char*>(bits.data()), qsizetype(bits.size() * 2));
}

}  // namespace

QByteArray exportWeights(const std::vector<SafeTensor>& tensors, DType dtype,
                         const std::string& source) {
  if (!isFloat(dtype))
    throw SafetensorsError("weights export: " + std::string(dtypeName(dtype)) +
                           " is not a float dtype (fp32, fp16 or bf16)");
  std::vector<SafeTensor> out;
  out.reserve(tensors.size());
  for (const SafeTensor& t : tensors) {
    if (!isFloat(t.dtype)) {
      out.push_back(t);  // integer buffers stay as they are
      continue;
    }
    if (t.data.size() != shapeNumel(t.shape) * qsizetype(dtypeSize(t.dtype)))
      throw SafetensorsError("tensor '" + t.name + "': " + std::to_string(t.data.size()) +
                             " bytes do not hold " + shapeString(t.shape));
    out.push_back({t.name, dtype, t.shape, t.dtype == dtype ? t.data : narrowed(widened(t), dtype)});
  }
  return writeSafetensors(out, {{"format", "pt"},
                                {"dtype", std::string(dtypeName(dtype))},
                                {"source", source}});
}

ExportRounding exportRounding(const std::vector<SafeTensor>& tensors, DType dtype) {
  ExportRounding r;
  if (dtype == DType::F32) return r;
  for (const SafeTensor& t : tensors) {
    if (!isFloat(t.dtype) || t.dtype == dtype) continue;
    const std::vector<float> v = widened(t);
    const QByteArray n = narrowed(v, dtype);
    std::vector<std::uint16_t> bits(v.size());
    std::memcpy(bits.data(), n.constData(), bits.size() * 2);
    std::vector<float> back(v.size());
    if (dtype == DType::F16) convertF16ToF32(bits.data(), back.data(), back.size());
    else convertBf16ToF32(bits.data(), back.data(), back.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (std::isinf(back[i]) && std::isfinite(v[i])) {
        ++r.overflowed;
        if (r.firstOverflow.empty()) r.firstOverflow = t.name;
      }
      if (back[i] == 0.f && v[i] != 0.f) ++r.flushed;
    }
  }
  return r;
}

}  // namespace amp
