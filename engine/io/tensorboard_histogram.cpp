#include "engine/io/tensorboard_histogram.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "engine/io/proto/tensorboard_event.pb.h"
#include "kernels/common/exponent_bins.h"
#include "kernels/common/float16.h"

namespace amp {

namespace {

// SummaryWriter's (and TensorFlow's) smallest bucket edge: [0, 1e-12) holds the exact zeros.
constexpr double kZeroBucketEdge = 1e-12;

std::optional<double> element(const tb::TensorProto& t, int i) {
  const std::string& raw = t.tensor_content();
  switch (t.dtype()) {
    case tb::DT_FLOAT:
      if (i < t.float_val_size()) return t.float_val(i);
      if (raw.size() >= std::size_t(i + 1) * 4) {
        float f;
        std::memcpy(&f, raw.data() + std::size_t(i) * 4, 4);
        return f;
      }
      return std::nullopt;
    case tb::DT_DOUBLE:
      if (i < t.double_val_size()) return t.double_val(i);
      if (raw.size() >= std::size_t(i + 1) * 8) {
        double d;
        std::memcpy(&d, raw.data() + std::size_t(i) * 8, 8);
        return d;
      }
      return std::nullopt;
    case tb::DT_HALF:
      if (i < t.half_val_size()) return halfBitsToFloat(static_cast<std::uint16_t>(t.half_val(i)));
      if (raw.size() >= std::size_t(i + 1) * 2) {
        std::uint16_t b;
        std::memcpy(&b, raw.data() + std::size_t(i) * 2, 2);
        return halfBitsToFloat(b);
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

// The binade of a positive finite magnitude: e with |x| in [2^e, 2^(e+1)).
int binade(double a) {
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  return e - 1;
}

int binOf(int e) { return std::clamp(e, kHistMinExp, kHistMaxExp) - kHistMinExp; }

// Spreads n values with magnitudes in [lo, hi] over the binades they cover, in proportion to the
// width on a log axis. Returns whether it spanned more than one binade (approximate).
bool spread(double lo, double hi, double n, std::array<double, kHistExpBins>& w) {
  const int elo = binade(lo);
  int ehi = binade(hi);
  // A right edge exactly at a power of two belongs to the next bucket (buckets are [left, right)).
  if (int ex = 0; hi > lo && std::frexp(hi, &ex) == 0.5) ehi = ex - 2;
  if (ehi <= elo) {
    w[binOf(elo)] += n;
    return false;
  }
  const double l0 = std::log2(lo), l1 = std::log2(hi), width = l1 - l0;
  for (int e = elo; e <= ehi; ++e) {
    const double overlap = std::min(l1, double(e + 1)) - std::max(l0, double(e));
    if (overlap > 0) w[binOf(e)] += n * overlap / width;
  }
  return true;
}

}  // namespace

std::optional<std::vector<TbBucket>> tensorBoardBuckets(const tb::Summary_Value& v) {
  std::vector<TbBucket> out;
  if (v.value_case() == tb::Summary::Value::kHisto) {
    const tb::HistogramProto& h = v.histo();
    if (h.bucket_limit_size() != h.bucket_size()) return std::nullopt;
    const double lo = h.min(), hi = h.max();
    for (int i = 0; i < h.bucket_size(); ++i) {
      if (!(h.bucket(i) > 0)) continue;  // SummaryWriter's leading empty bucket among them
      // Bucket i is [limit[i-1], limit[i]); the first starts at min. Clamped to [min, max]:
      // values never lie outside them, and equal values (min == max) are read as themselves.
      double left = i == 0 ? lo : h.bucket_limit(i - 1), right = h.bucket_limit(i);
      if (lo <= hi) {
        left = std::max(left, lo);
        right = std::min(right, hi);
      }
      if (right < left) right = left;
      out.push_back({left, right, h.bucket(i)});
    }
    return out;
  }
  if (v.value_case() == tb::Summary::Value::kTensor && v.metadata().plugin_data().plugin_name() == "histograms") {
    const tb::TensorProto& t = v.tensor();
    if (t.tensor_shape().dim_size() != 2 || t.tensor_shape().dim(1).size() != 3) return std::nullopt;
    const std::int64_t rows = t.tensor_shape().dim(0).size();
    if (rows < 0 || rows > 100000) return std::nullopt;
    for (int r = 0; r < rows; ++r) {
      auto l = element(t, 3 * r), h = element(t, 3 * r + 1), c = element(t, 3 * r + 2);
      if (!l || !h || !c) return std::nullopt;
      if (*c > 0) out.push_back({std::min(*l, *h), std::max(*l, *h), *c});
    }
    return out;
  }
  return std::nullopt;
}

RebinnedHistogram rebinTensorBoardHistogram(const std::string& tag, const std::vector<TbBucket>& buckets) {
  RebinnedHistogram out;
  HistogramRecord& h = out.record;
  h.tensor = tag;
  std::string lower = tag;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // TensorBoard's usual names: "fc1.weight.grad" / "grad/fc1.weight", "fc1.weight", "relu1".
  const bool parameter = lower.find("weight") != std::string::npos || lower.find("bias") != std::string::npos;
  h.kind = lower.find("grad") != std::string::npos ? HistogramKind::WeightGrad
           : parameter                               ? HistogramKind::Weight
                                                     : HistogramKind::Activation;
  std::array<double, kHistExpBins> w{};
  double zeros = 0, nonFinite = 0;
  for (const TbBucket& b : buckets) {
    if (!(b.count > 0) || !std::isfinite(b.count)) continue;
    const double n = std::min(b.count, 9.0e15);
    if (!std::isfinite(b.left) || !std::isfinite(b.right)) {
      nonFinite += n;
      continue;
    }
    if ((b.left == 0 && b.right <= kZeroBucketEdge) || (b.left == 0 && b.right == 0)) {
      zeros += n;
      continue;
    }
    if (b.left < 0 && b.right > 0) {  // spans zero: each side by its width, at half its magnitude
      const double neg = n * -b.left / (b.right - b.left);
      spread(-b.left / 2, -b.left / 2, neg, w);
      spread(b.right / 2, b.right / 2, n - neg, w);
      ++out.approximateBuckets;
      continue;
    }
    double lo = std::fabs(b.left), hi = std::fabs(b.right);
    if (lo > hi) std::swap(lo, hi);
    if (lo == 0) lo = std::min(hi, kZeroBucketEdge);  // [0, x) wider than the zero bucket
    if (spread(lo, hi, n, w)) ++out.approximateBuckets;
  }
  // Whole counts that keep the total: floors, then the largest remainders get the rest.
  std::array<std::int64_t, kHistExpBins> counts{};
  double total = 0;
  std::int64_t given = 0;
  for (int k = 0; k < kHistExpBins; ++k) {
    total += w[k];
    counts[k] = static_cast<std::int64_t>(std::floor(w[k]));
    given += counts[k];
  }
  std::int64_t rest = static_cast<std::int64_t>(std::llround(total)) - given;
  std::array<int, kHistExpBins> order{};
  for (int k = 0; k < kHistExpBins; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return w[a] - std::floor(w[a]) > w[b] - std::floor(w[b]);
  });
  for (int i = 0; rest > 0 && i < kHistExpBins; ++i, --rest) ++counts[order[i]];
  const auto z = static_cast<std::int64_t>(std::llround(zeros));
  const auto nf = static_cast<std::int64_t>(std::llround(nonFinite));
  out.zeros = z;
  for (ExponentHistogram* side : {&h.scaled, &h.unscaled}) {
    for (int k = 0; k < kHistExpBins; ++k) {
      const int e = kHistMinExp + k;
      side->counts[k] = counts[k];
      side->total += counts[k];
      if (e < -24) side->underflow += counts[k];
      if (e < -14) side->subnormal += counts[k];
      if (e >= 16) side->overflow += counts[k];  // |x| >= 2^16 > 65504
    }
    side->counts[kHistBinZero] = z;
    side->counts[kHistBinInf] = nf;
    side->total += z + nf;
    side->overflow += nf;
    side->nonFinite = nf;
  }
  return out;
}

}  // namespace amp
