// Element types of tensors. fp16/bf16 are stored in 16 bits so memory figures are real.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace amp {

enum class DType : std::uint8_t { F32, F16, BF16, I32, U8 };

constexpr std::size_t dtypeSize(DType t) {
  return t == DType::U8 ? 1 : (t == DType::F16 || t == DType::BF16) ? 2 : 4;
}

constexpr bool isLowPrecision(DType t) { return t == DType::F16 || t == DType::BF16; }

constexpr std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "int32";
    case DType::U8: return "uint8";
  }
  return "?";
}

inline std::optional<DType> parseDType(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::F32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "int32") return DType::I32;
  return std::nullopt;
}

}  // namespace amp
