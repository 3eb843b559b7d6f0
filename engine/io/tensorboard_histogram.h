// TensorBoard's value histograms (PyTorch's SummaryWriter.add_histogram, TF1's HistogramProto,
// TF2's [k, 3] tensors) re-binned by binary exponent, the app's histogram view.
//
// A TensorBoard histogram keeps buckets of values, not exponents, so the re-binning is exact only
// where a bucket lies within one binade [2^e, 2^(e+1)). What it does with the others, and why:
// * Bucket edges: bucket i covers [limit[i-1], limit[i]) (numpy.histogram, TensorFlow), the first
//   one starting at the proto's min; every bucket is clamped to [min, max], so a tensor of equal
//   values (LayerNorm's weights, all 1.0) is read as exactly that value, not its bucket's middle.
// * Zeros: SummaryWriter's default buckets (TensorFlow's: +-1e-12 * 1.1^k and 0) put exact zeros
//   in the bucket [0, 1e-12). A bucket that starts at 0 and ends at or below 1e-12 is counted as
//   zeros (the zero bin): taking its middle made every zero an fp16 underflow.
// * A bucket that spans powers of two (SummaryWriter's 1.1x buckets: one in seven) is split
//   between the binades it covers in proportion to its width on a log axis; the counts are then
//   rounded so that the total is kept. Those are approximate, and the result says how many.
// * A bucket that spans zero (TF2's linear buckets) is split by its width on each side, each part
//   at the binade of half its magnitude: approximate, counted with the others.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/io/run_record.h"

namespace tb {
class Summary_Value;
}

namespace amp {

struct TbBucket {
  double left, right, count;
};

// The buckets of a histogram value (HistogramProto, or a [k, 3] tensor of the "histograms"
// plugin), edges clamped to the proto's [min, max]; nullopt when the value is no histogram.
std::optional<std::vector<TbBucket>> tensorBoardBuckets(const tb::Summary_Value& v);

struct RebinnedHistogram {
  HistogramRecord record;
  int approximateBuckets = 0;  // buckets split across binades or across zero
  std::int64_t zeros = 0;      // values counted as zeros (the [0, 1e-12) bucket)
};

// The buckets re-binned by binary exponent (kind guessed from the tag: "grad" -> weight_grad,
// "weight"/"bias" -> weight, else activation). Both sides are the same: a log has no loss scale.
RebinnedHistogram rebinTensorBoardHistogram(const std::string& tag, const std::vector<TbBucket>& buckets);

}  // namespace amp
