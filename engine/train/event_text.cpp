#include "engine/train/event_text.h"

#include <cmath>
#include <cstdio>

namespace amp {

std::string formatScale(double s) {
  char buf[64];
  int e = 0;
  const double m = std::frexp(s, &e);
  if (m == 0.5 && (e - 1 > 24 || e - 1 < -10)) {
    std::snprintf(buf, sizeof buf, "2^%d", e - 1);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.10g", s);
  return buf;
}

std::vector<std::string> describeEvents(const StepMetrics& m, int growthInterval) {
  std::vector<std::string> out;
  const std::string at = "step " + std::to_string(m.step) + ": ";
  const std::string scales = formatScale(m.scale) + " → " + formatScale(m.scaleAfter);
  if (m.skipped) {
    std::string what = m.firstNonFinite.empty() ? std::string("non-finite gradient")
                                                : "non-finite gradient in " + m.firstNonFinite;
    if (m.injected) what += " (injected)";
    if (m.postUnscaleOverflow) what = "gradient overflowed only after unscaling";
    std::string tail = m.scaleEvent == "backoff" ? ", scale " + scales
                       : m.scaleEvent == "hysteresis" ? ", scale kept (hysteresis absorbed it)"
                                                      : "";
    out.push_back(at + what + " — step skipped" + tail);
  } else if (m.injected) {
    out.push_back(at + "non-finite gradient injected, but this scaler never skips: the update "
                       "used it");
  }
  if (m.scaleEvent == "growth")
    out.push_back(at + std::to_string(growthInterval) + " clean steps — scale " + scales);
  if (m.scaleEvent == "growth_rejected")
    out.push_back(at + "scale growth rejected: " + formatScale(m.scale) + " × growth would overflow fp32");
  if (m.scaleEvent == "clamped") out.push_back(at + "scale clamped at " + formatScale(m.scaleAfter));
  if (m.postUnscaleOverflow && !m.skipped)
    out.push_back(at + "gradients became non-finite only after unscaling (scale < 1) — "
                       "PyTorch's check misses this");
  if (m.diverged) out.push_back(m.divergence);
  return out;
}

}  // namespace amp
