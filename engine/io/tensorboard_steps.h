// A TensorBoard log's scalars (by tag and step) turned into the steps of a run, as their writer
// meant them. What a plain SummaryWriter log is like, and what is done about it:
// * The loss scale is logged after scaler.update() (the usual place: `writer.add_scalar("scale",
//   scaler.get_scale(), step)` at the end of the step), so a generic scale tag is the scale
//   AFTER that step; only AMP Studio's own export writes the scale before ("amp/loss_scale")
//   beside the one after ("amp/loss_scale_after"). A skip is a scale that fell from one step to
//   the next: located only when both sides are known (before(s) = after(s-1)); a fall between
//   two values logged several steps apart is counted in a warning, never pinned on a step.
// * Steps without a logged scale carry the last one logged (not 1).
// * The training steps are those with a training loss; a value logged at another step (an
//   evaluation at step 1000 of an epoch, the lr once an epoch) goes to the training step at or
//   before it (the first one if none is before), never making a step of its own with a loss of
//   0. A log without any training loss has steps from its other training scalars, loss NaN.
#pragma once

#include <QStringList>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/train/step_metrics.h"

namespace amp {

enum class TbField {
  Loss, ScaleBefore, ScaleAfter, GrowthTracker, Skipped, GradNorm, Lr, StepMs, SamplesPerS,
  TestLoss, TestAcc, LostUpdates, Ignored
};

// The field a tag stands for (its usual spellings, case-insensitive), or nullopt.
std::optional<TbField> tensorBoardField(const std::string& tag);

struct TbScalars {
  std::map<std::int64_t, std::map<TbField, double>> values;  // step -> field -> last value logged
  std::map<std::int64_t, double> wallTime;                   // step -> first event's wall time
};

struct TbSteps {
  std::vector<StepMetrics> steps;
  QStringList warnings;
  bool scaleLogged = false;     // some loss-scale tag was logged
  bool scaleAboveOne = false;   // and some value of it was not 1 (a GradScaler at work)
  bool stepTime = false;        // step_ms logged or derived from wall times
  bool throughput = false;      // samples_per_s logged
};

TbSteps tensorBoardSteps(const TbScalars& s);

}  // namespace amp
