// Learning-rate schedules: constant, step decay, cosine with linear warm-up. The schedule is
// indexed by scheduler steps, which advance every iteration even when the loss scaler skipped
// the optimizer step — PyTorch's behaviour (and its "lr_scheduler.step() before
// optimizer.step()" warning, pytorch#44511); the metrics flag when that happens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace amp {

struct ScheduleConfig {
  std::string name = "constant";  // constant | step | cosine
  std::int64_t stepSize = 1000;   // step: decay every stepSize scheduler steps
  double gamma = 0.1;             // step: multiplier
  std::int64_t warmupSteps = 0;   // cosine: linear warm-up from lr/warmup to lr
  std::int64_t totalSteps = 0;    // cosine: length of the decay (0 = the run's length)
  double minLr = 0.0;             // cosine: floor
};

class LrSchedule {
 public:
  LrSchedule(ScheduleConfig c, double baseLr, std::int64_t runSteps);
  double lrAt(std::int64_t schedulerStep) const;  // lr used for the update after that many steps
  const ScheduleConfig& config() const { return m_c; }

 private:
  ScheduleConfig m_c;
  double m_base;
};

std::optional<std::string> validateSchedule(const ScheduleConfig& c);

}  // namespace amp
