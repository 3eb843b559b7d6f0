// A run's fp8 records (StepMetrics::fp8, engine/amp/fp8_record.h) arranged for the fp8 views:
// the quantised tensors in model order (layers in the order the forward pass meets them, each
// layer's x, w, dy), and one tensor's figures as columns over the steps. Also the formats' ranges
// as the views draw them (E4M3, E5M2, E2M1: largest finite, smallest subnormal).
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>
#include <optional>

namespace amp {
struct Fp8Config;
}

namespace amp::ui {

struct RunData;

struct Fp8TensorSeries {
  QString tensor;  // "fc2.x"
  QString format;  // "e4m3"
  QVector<double> step, amax, historyAmax, scale, underflow, overflow, sqnrDb;
  bool hasWhatIf = false;
  QVector<double> whatIfUnderflow, whatIfOverflow, whatIfSqnrDb;
  int size() const { return step.size(); }
  int indexOfStep(double s) const;  // -1 if that step has no record
};

// Whether any step of the run recorded a quantised tensor.
bool hasFp8Records(const RunData& run);
// The run's quantised tensors in model order: layers in their forward order (the order their x
// or w first appears: the engine records dy in backward, i.e. reversed), then x, w, dy.
QStringList fp8TensorsInModelOrder(const RunData& run);
// One tensor's records, step by step (empty series when the run has none).
Fp8TensorSeries fp8Series(const RunData& run, const QString& tensor);

struct Fp8FormatRange {
  double max = 0;            // largest finite magnitude
  double minNormal = 0;      // smallest normal magnitude
  double minSubnormal = 0;   // smallest non-zero magnitude
  int maxExp = 0, minNormalExp = 0, minSubnormalExp = 0;  // their binary exponents
};
// "e4m3", "e5m2", "e2m1" (case-insensitive); nothing for another name.
std::optional<Fp8FormatRange> fp8FormatRange(const QString& format);
QString fp8FormatLabel(const QString& format);  // "E4M3"

// The injected spike of a run (fp8.inject_spike "STEP:TENSOR:FACTOR"): step and tensor, or
// step 0 when none.
struct Fp8Spike {
  long long step = 0;
  QString tensor;
  double factor = 0;
};
Fp8Spike fp8Spike(const Fp8Config& config);

}  // namespace amp::ui
