// The model's decision regions over a 2-D input plane, as TensorFlow Playground draws them: the
// predicted class and its probability at each cell of a grid spanning the data. Only for
// classification data of two features (spirals, circles, blobs); the GUI's "Data" chart draws
// it under the training points while the run trains.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace amp {

struct Dataset;

struct DecisionMap {
  std::int64_t step = 0;  // the optimizer steps done when it was computed
  int width = 0, height = 0;
  float xMin = 0, xMax = 0, yMin = 0, yMax = 0;  // the plane the grid covers (data units)
  int classes = 0;
  // Row-major, width * height; row 0 is the top (yMax), column 0 the left (xMin). Each cell is
  // evaluated at its centre.
  std::vector<std::int32_t> cls;  // argmax of the model's outputs
  std::vector<float> confidence;  // softmax probability of that class, in [1/classes, 1]
  // The training points (x, y pairs) and their labels, shared by every map of a run.
  std::shared_ptr<const std::vector<float>> points;
  std::shared_ptr<const std::vector<std::int32_t>> labels;

  // The input at the centre of cell (col, row).
  float cellX(int col) const { return xMin + (float(col) + 0.5f) * (xMax - xMin) / float(width); }
  float cellY(int row) const { return yMax - (float(row) + 0.5f) * (yMax - yMin) / float(height); }
};

// Whether decision regions can be drawn for this data: classification on two features.
bool hasDecisionPlane(const Dataset& d);

// The plane a map covers: the points' bounding box with `margin` of its size around it, made
// square (the same scale on both axes, as the data's own geometry).
void decisionPlane(std::span<const float> xy, float margin, float& xMin, float& xMax, float& yMin, float& yMax);

// Argmax and its softmax probability of each row of `logits` (rows x classes), computed stably
// (max subtracted before exp). A single-output model is read as a sigmoid logit of class 1.
void classesFromLogits(std::span<const float> logits, int classes, std::vector<std::int32_t>& cls,
                       std::vector<float>& confidence);

}  // namespace amp
