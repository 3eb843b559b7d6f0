// Runs whose curves coincide. In the underflow lesson fp16 with loss scaling trains exactly as
// fp32 does, and twin runs often match to the last digit: the line drawn last covers the other,
// whose colour vanishes from the chart. The charts draw a covered run's line wider, beneath,
// so it shows as a halo around the one on top, and the legend says which runs coincide and how
// closely.
#pragma once

#include <QString>
#include <span>
#include <vector>

namespace amp::ui {

struct Coincidence {
  int index = -1;         // the run drawn later (on top)
  int sameAs = -1;        // the earlier run it covers
  double maxRelDiff = 0;  // the largest relative difference over their common steps
};

// columns[i]: run i's values, in draw order. Run j coincides with the first earlier run i whose
// values agree with its own at each of their common steps (at least `minCommon` of them) within
// relTol of the larger magnitude; non-finite values must sit at the same steps (and are
// skipped). At most one Coincidence per later run.
std::vector<Coincidence> coincidingRuns(const std::vector<std::span<const double>>& columns, double relTol,
                                        int minCommon = 2);

// " = fp32 (±0.03%)" or " = fp32 (identical)": a legend suffix for the run on top.
QString coincidenceSuffix(const QString& coveredName, double maxRelDiff);

}  // namespace amp::ui
