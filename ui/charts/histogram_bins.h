// Where the exponent-histogram bins sit on a chart axis, shared by the bar chart (x) and the
// heat map (y): bin k of 2^e sits at [e, e+1); after a gap the zero, inf and nan bins get two
// units each, so their axis labels do not collide. Also the fp16/bf16 range constants.
#pragma once

#include <QString>

#include "engine/train/step_metrics.h"
#include "kernels/common/exponent_bins.h"

class QCategoryAxis;
class QObject;

namespace amp::ui {

constexpr double kHistAxisMin = kHistMinExp - 1;  // a unit of margin on the left
constexpr double kHistAxisMax = 28;               // after the nan bin
constexpr int kFp16SubnormalExp = -24;            // smallest fp16 subnormal 2^-24
constexpr int kFp16NormalExp = -14;               // smallest fp16 normal 2^-14
constexpr int kFp16OverflowExp = 16;              // 2^16 > 65504: bins from here overflow

double binLeft(int bin);
double binWidth(int bin);
inline double binCenter(int bin) { return binLeft(bin) + binWidth(bin) / 2; }
// The bin drawn at axis position `pos`, or -1 in a gap.
int binAt(double pos);
// "2⁻¹⁴" for exponent bins, "zero" / "inf" / "nan" for the others.
QString binName(int bin);
QString powerOfTwo(int exponent);

// "weight grad", "activation grad", "activation".
QString histogramKindLabel(HistogramKind kind);

// An axis labelled 2⁻⁴⁰ ... 2¹⁶, zero, inf, nan at the bins' positions. Compact: fewer labels,
// for a short vertical axis.
QCategoryAxis* makeExponentAxis(QObject* parent, bool compact = false);
// The compact axis's labels cut to `maxLabels` (at least 2) by importance: 2^-24 and 2^16 (fp16's
// smallest subnormal and its overflow), 2^0, 2^-14, 2^-40, then "0 inf nan". A short heat map
// (70 px at x1.5) drew all six as "…"; fewer whole labels say more.
void fitCompactExponentAxis(QCategoryAxis* axis, int maxLabels);

}  // namespace amp::ui
