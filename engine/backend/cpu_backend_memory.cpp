// CPU backend: allocation, host transfer, casts and simple elementwise updates.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/chunked.h"
#include "kernels/common/image_layout.h"
#include "kernels/cpu/convert.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

namespace cpu {
void requireSameShape(const Tensor& a, const Tensor& b, const char* op) {
  if (a.numel() != b.numel())
    throw std::invalid_argument(std::string(op) + ": shapes " + shapeString(a.shape()) + " and " +
                                shapeString(b.shape()) + " differ");
}
}  // namespace cpu

CpuBackend::CpuBackend() = default;

CpuBackend::~CpuBackend() {
  m_blocks.drain([](void* p, std::size_t) { std::free(p); });
}

namespace {
// A channels-last tensor crosses the host boundary through a contiguous copy (the transfers
// speak the logical order): the copy for a download, the scratch to upload into for an upload.
Tensor logicalCopy(CpuBackend& be, const Tensor& t) {
  return be.toFormat(t, MemoryFormat::Contiguous, MemCategory::Workspace);
}
Tensor logicalScratch(CpuBackend& be, const Tensor& t) {
  return be.empty(t.shape(), t.dtype(), MemCategory::Workspace);
}

// 64-byte alignment for AVX-512 loads; at least one line so empty tensors still own memory.
std::size_t roundedSize(std::size_t bytes) { return std::max<std::size_t>(64, (bytes + 63) / 64 * 64); }
}  // namespace

void* CpuBackend::allocateBytes(std::size_t bytes) {
  const std::size_t rounded = roundedSize(bytes);
  if (void* p = m_blocks.take(rounded)) return p;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void CpuBackend::freeBytes(void* p, std::size_t bytes) {
  if (!m_blocks.keep(p, roundedSize(bytes))) std::free(p);
}

void CpuBackend::uploadFloat(Tensor& dst, std::span<const float> src) {
  if (dst.channelsLast()) {
    Tensor scratch = logicalScratch(*this, dst);
    uploadFloat(scratch, src);
    return convertFormatInto(scratch, dst);
  }
  if (static_cast<std::int64_t>(src.size()) != dst.numel())
    throw std::invalid_argument("upload: size mismatch for " + shapeString(dst.shape()));
  const std::size_t n = src.size();
  switch (dst.dtype()) {
    case DType::F32: std::memcpy(dst.rawData(), src.data(), n * 4); break;
    case DType::F16: convertF32ToF16(src.data(), dst.data<std::uint16_t>(), n); break;
    case DType::BF16: convertF32ToBf16(src.data(), dst.data<std::uint16_t>(), n); break;
    default: throw std::invalid_argument("uploadFloat into a non-float tensor");
  }
}

void CpuBackend::uploadInt(Tensor& dst, std::span<const std::int32_t> src) {
  if (dst.channelsLast()) {
    Tensor scratch = logicalScratch(*this, dst);
    uploadInt(scratch, src);
    return convertFormatInto(scratch, dst);
  }
  if (dst.dtype() != DType::I32 || static_cast<std::int64_t>(src.size()) != dst.numel())
    throw std::invalid_argument("uploadInt: needs an int32 tensor of matching size");
  std::memcpy(dst.rawData(), src.data(), src.size() * 4);
}

std::vector<float> CpuBackend::toHostFloat(const Tensor& t) {
  if (t.channelsLast()) return toHostFloat(logicalCopy(*this, t));
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  const std::size_t n = out.size();
  switch (t.dtype()) {
    case DType::F32: std::memcpy(out.data(), t.rawData(), n * 4); break;
    case DType::F16: convertF16ToF32(t.data<std::uint16_t>(), out.data(), n); break;
    case DType::BF16: convertBf16ToF32(t.data<std::uint16_t>(), out.data(), n); break;
    case DType::I32:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(t.data<std::int32_t>()[i]);
      break;
    case DType::U8:
      for (std::size_t i = 0; i < n; ++i) out[i] = t.data<std::uint8_t>()[i];
      break;
  }
  return out;
}

std::vector<std::int32_t> CpuBackend::toHostInt(const Tensor& t) {
  if (t.dtype() != DType::I32) throw std::invalid_argument("toHostInt: not an int32 tensor");
  if (t.channelsLast()) return toHostInt(logicalCopy(*this, t));
  const auto* p = t.data<std::int32_t>();
  return {p, p + t.numel()};
}

std::vector<std::uint8_t> CpuBackend::toHostBytes(const Tensor& t) {
  if (t.channelsLast()) return toHostBytes(logicalCopy(*this, t));
  const auto* p = t.data<std::uint8_t>();
  return {p, p + t.bytes()};
}

void CpuBackend::uploadBytes(Tensor& dst, std::span<const std::uint8_t> src) {
  if (src.size() != dst.bytes())
    throw std::invalid_argument("uploadBytes: " + std::to_string(src.size()) +
                                " bytes for a tensor of " + std::to_string(dst.bytes()));
  if (dst.channelsLast()) {
    Tensor scratch = logicalScratch(*this, dst);
    uploadBytes(scratch, src);
    return convertFormatInto(scratch, dst);
  }
  std::memcpy(dst.rawData(), src.data(), src.size());
}

void CpuBackend::fill(Tensor& t, float value) {
  if (t.dtype() == DType::I32 || t.dtype() == DType::U8) {
    if (value != 0.f) throw std::invalid_argument("fill: integer tensors can only be zeroed");
    std::memset(t.rawData(), 0, t.bytes());
    return;
  }
  cpu::dispatchFloatCode(floatCode(t), [&](auto tag) {
    using Tag = decltype(tag);
    auto* p = t.data<typename Tag::Storage>();
    const auto v = Tag::store(value);
    std::fill(p, p + t.numel(), v);
  });
}

void CpuBackend::castInto(const Tensor& src, Tensor& dst) {
  cpu::requireSameShape(src, dst, "cast");
  checks::sameFormat({&src, &dst}, "cast");
  const std::size_t n = static_cast<std::size_t>(src.numel());
  const DType s = src.dtype(), d = dst.dtype();
  if (s == d) return copyInto(src, dst);
  // The hot casts (weights and activations to and from 16 bits) use the vectorised loops, split
  // across the threads like every other elementwise pass (the converters are single-threaded).
  const auto split = [&](auto convert, const auto* in, auto* out) {
    cpu::forEachChunk(static_cast<std::int64_t>(n), [&](std::int64_t b, std::int64_t len) {
      convert(in + b, out + b, static_cast<std::size_t>(len));
    });
  };
  if (s == DType::F32 && d == DType::F16)
    return split(convertF32ToF16, src.data<float>(), dst.data<std::uint16_t>());
  if (s == DType::F32 && d == DType::BF16)
    return split(convertF32ToBf16, src.data<float>(), dst.data<std::uint16_t>());
  if (s == DType::F16 && d == DType::F32)
    return split(convertF16ToF32, src.data<std::uint16_t>(), dst.data<float>());
  if (s == DType::BF16 && d == DType::F32)
    return split(convertBf16ToF32, src.data<std::uint16_t>(), dst.data<float>());
  cpu::dispatchFloatCode(floatCode(src), [&](auto st) {
    cpu::dispatchFloatCode(floatCode(dst), [&](auto dt) {
      using S = decltype(st);
      using D = decltype(dt);
      const auto* in = src.data<typename S::Storage>();
      auto* out = dst.data<typename D::Storage>();
      for (std::size_t i = 0; i < n; ++i) out[i] = D::store(S::load(in[i]));
    });
  });
}

void CpuBackend::copyInto(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel())
    throw std::invalid_argument("copy: tensors differ in dtype or size");
  checks::sameFormat({&src, &dst}, "copy");
  std::memcpy(dst.rawData(), src.rawData(), src.bytes());
}

void CpuBackend::gatherRows(const Tensor& src, std::span<const std::int64_t> rows, Tensor& dst) {
  const std::size_t rowBytes = checks::gatherRows(src, rows, dst);
  const auto* in = static_cast<const std::uint8_t*>(src.rawData());
  auto* out = static_cast<std::uint8_t*>(dst.rawData());
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out + i * rowBytes, in + static_cast<std::size_t>(rows[i]) * rowBytes, rowBytes);
}

void CpuBackend::accumulate(Tensor& dst, const Tensor& src) {
  cpu::requireSameShape(src, dst, "accumulate");
  checks::sameFormat({&src, &dst}, "accumulate");
  const int sc = floatCode(src), dc = floatCode(dst);
  cpu::forEachChunk(src.numel(), [&](std::int64_t b, std::int64_t n) {
    float sb[cpu::kChunk], db[cpu::kChunk];
    const float* in = cpu::widenChunk(sc, src.rawData(), b, n, sb);
    float* acc = const_cast<float*>(cpu::widenChunk(dc, dst.rawData(), b, n, db));
    for (std::int64_t i = 0; i < n; ++i) acc[i] += in[i];
    cpu::narrowChunk(dc, dst.rawData(), b, n, acc);
  });
}

void CpuBackend::scaleInPlace(Tensor& t, float factor) {
  const int tc = floatCode(t);
  cpu::forEachChunk(t.numel(), [&](std::int64_t b, std::int64_t n) {
    float buf[cpu::kChunk];
    float* v = const_cast<float*>(cpu::widenChunk(tc, t.rawData(), b, n, buf));
    for (std::int64_t i = 0; i < n; ++i) v[i] *= factor;
    cpu::narrowChunk(tc, t.rawData(), b, n, v);
  });
}

void CpuBackend::roundThrough(Tensor& t, DType through) {
  if (t.dtype() != DType::F32) throw std::invalid_argument("roundThrough: needs an fp32 tensor");
  cpu::forEachChunk(t.numel(), [&](std::int64_t b, std::int64_t n) {
    float* p = t.data<float>() + b;
    if (through == DType::F16) roundF32ThroughF16(p, static_cast<std::size_t>(n));
    else if (through == DType::BF16) roundF32ThroughBf16(p, static_cast<std::size_t>(n));
  });
}

void CpuBackend::setElement(Tensor& t, std::int64_t index, float value) {
  if (index < 0 || index >= t.numel()) throw std::out_of_range("setElement: index out of range");
  if (t.channelsLast()) {  // index is logical (NCHW): find where that element lies
    const std::int64_t planeSize = t.dim(2) * t.dim(3);
    index = planeOffset<std::int64_t>(true, index / planeSize, index % planeSize, t.dim(1),
                                      planeSize);
  }
  cpu::dispatchFloatCode(floatCode(t), [&](auto tag) {
    using T = decltype(tag);
    t.data<typename T::Storage>()[index] = T::store(value);
  });
}

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace amp
