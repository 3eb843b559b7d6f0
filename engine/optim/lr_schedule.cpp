#include "engine/optim/lr_schedule.h"

#include <cmath>
#include <stdexcept>

namespace amp {

std::optional<std::string> validateSchedule(const ScheduleConfig& c) {
  if (c.name != "constant" && c.name != "step" && c.name != "cosine")
    return "schedule.name must be constant, step or cosine (got '" + c.name + "')";
  if (c.stepSize < 1) return "schedule.step_size must be >= 1";
  if (!(c.gamma > 0) || !std::isfinite(c.gamma)) return "schedule.gamma must be > 0";
  if (c.warmupSteps < 0) return "schedule.warmup_steps must be >= 0";
  if (c.totalSteps < 0) return "schedule.total_steps must be >= 0";
  if (!(c.minLr >= 0) || !std::isfinite(c.minLr)) return "schedule.min_lr must be >= 0";
  return std::nullopt;
}

LrSchedule::LrSchedule(ScheduleConfig c, double baseLr, std::int64_t runSteps)
    : m_c(std::move(c)), m_base(baseLr) {
  if (auto e = validateSchedule(m_c)) throw std::invalid_argument(*e);
  if (m_c.totalSteps == 0) m_c.totalSteps = runSteps;
}

double LrSchedule::lrAt(std::int64_t k) const {
  if (m_c.name == "step") return m_base * std::pow(m_c.gamma, double(k / m_c.stepSize));
  if (m_c.name == "cosine") {
    if (k < m_c.warmupSteps) return m_base * double(k + 1) / double(m_c.warmupSteps);
    const double span = std::max<std::int64_t>(1, m_c.totalSteps - m_c.warmupSteps);
    const double t = std::min(1.0, double(k - m_c.warmupSteps) / span);
    return m_c.minLr + 0.5 * (m_base - m_c.minLr) * (1.0 + std::cos(M_PI * t));
  }
  return m_base;
}

}  // namespace amp
