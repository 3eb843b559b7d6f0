#include "engine/train/decision_map.h"

#include <algorithm>
#include <cmath>

#include "engine/data/dataset.h"

namespace amp {

bool hasDecisionPlane(const Dataset& d) {
  // Points in a plane: two features per sample, not a two-token sequence (model.block=2).
  return d.isClassification() && !d.isTokenData() && d.featureSize() == 2 && d.count > 0;
}

void decisionPlane(std::span<const float> xy, float margin, float& xMin, float& xMax, float& yMin, float& yMax) {
  xMin = yMin = 1e30f;
  xMax = yMax = -1e30f;
  for (std::size_t i = 0; i + 1 < xy.size(); i += 2) {
    if (!std::isfinite(xy[i]) || !std::isfinite(xy[i + 1])) continue;
    xMin = std::min(xMin, xy[i]);
    xMax = std::max(xMax, xy[i]);
    yMin = std::min(yMin, xy[i + 1]);
    yMax = std::max(yMax, xy[i + 1]);
  }
  if (xMin > xMax) xMin = yMin = -1, xMax = yMax = 1;  // no finite point: the unit square
  const float cx = (xMin + xMax) / 2, cy = (yMin + yMax) / 2;
  float half = std::max({xMax - xMin, yMax - yMin, 1e-3f}) / 2;
  half *= 1 + 2 * margin;
  xMin = cx - half;
  xMax = cx + half;
  yMin = cy - half;
  yMax = cy + half;
}

void classesFromLogits(std::span<const float> logits, int classes, std::vector<std::int32_t>& cls,
                       std::vector<float>& confidence) {
  const int k = std::max(1, classes);
  const std::size_t rows = logits.size() / std::size_t(k);
  cls.resize(rows);
  confidence.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits.data() + r * std::size_t(k);
    if (k == 1) {  // sigmoid(z): class 1 when z > 0
      const double p = 1.0 / (1.0 + std::exp(-double(z[0])));
      cls[r] = p > 0.5 ? 1 : 0;
      confidence[r] = float(p > 0.5 ? p : 1.0 - p);
      continue;
    }
    int best = 0;
    for (int c = 1; c < k; ++c)
      if (z[c] > z[best]) best = c;
    double sum = 0;
    for (int c = 0; c < k; ++c) sum += std::exp(double(z[c]) - double(z[best]));
    cls[r] = best;
    confidence[r] = std::isfinite(sum) && sum > 0 ? float(1.0 / sum) : 0.0f;  // exp(0) / sum
  }
}

}  // namespace amp
