#include "engine/config/run_config.h"

namespace amp {

std::string_view precisionModeName(PrecisionMode m) {
  switch (m) {
    case PrecisionMode::Fp32: return "fp32";
    case PrecisionMode::AmpFp16: return "fp16";
    case PrecisionMode::AmpBf16: return "bf16";
    case PrecisionMode::PureFp16: return "pure_fp16";
    case PrecisionMode::Fp8: return "fp8";
  }
  return "?";
}

std::optional<PrecisionMode> parsePrecisionMode(std::string_view s) {
  for (PrecisionMode m : {PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16,
                          PrecisionMode::PureFp16, PrecisionMode::Fp8})
    if (precisionModeName(m) == s) return m;
  if (s == "amp_fp16") return PrecisionMode::AmpFp16;
  if (s == "amp_bf16") return PrecisionMode::AmpBf16;
  return std::nullopt;
}

std::string RunConfig::displayName() const {
  if (!name.empty()) return name;
  return model.name + " " + std::string(precisionModeName(mode));
}

}  // namespace amp
