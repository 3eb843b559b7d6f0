// What one quantised tensor looked like at one step (StepMetrics::fp8): recorded for each
// quantised Linear layer's input (x), weight (w) and output gradient (dy), in the orientation of
// its first GEMM (x and w as the forward GEMM takes them, dy as the input-gradient GEMM does).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>

namespace amp {

struct Fp8TensorRecord {
  std::string tensor;        // "fc2.x", "transformer.h.0.mlp.c_fc.dy"
  std::string format;        // "e4m3", "e5m2", "e2m1"
  double amax = 0;           // this step's largest magnitude (before quantising)
  double scale = 1;          // the scale used (per-tensor recipes; nvfp4: the tensor scale; blocks: 1)
  double historyAmax = std::numeric_limits<double>::quiet_NaN();  // delayed: the amax the scale came from
  double underflow = 0;      // share of non-zero values that became zero
  double overflow = 0;       // share of values clipped or made inf / NaN
  double sqnrDb = 0;         // signal-to-quantisation-noise ratio (+inf: exact)
  double relMse = 0;         // error energy / signal energy
  std::int64_t count = 0;
  std::map<int, std::int64_t> blockExponents;  // block recipes, histogram steps: log2 of block scales
  // Histogram steps: floor(log2 |value x its scale|) of the non-zero finite values, i.e. the
  // tensor as the format receives it, to draw against the format's range (count - nonzero of
  // the values are zeros). From the host reference on any backend.
  std::map<int, std::int64_t> scaledExponents;
  // "What if" (fp8.what_if): the same figures for the other recipe on the same values.
  bool hasWhatIf = false;
  double whatIfUnderflow = 0, whatIfOverflow = 0, whatIfSqnrDb = 0;
};

}  // namespace amp
