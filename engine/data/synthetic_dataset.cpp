// Gaussian regression data from amp::Rng: the same seed gives the same values everywhere.
#include "engine/data/synthetic_dataset.h"

#include <algorithm>

#include "engine/data/rng.h"

namespace amp {
namespace {

// Inputs and targets come from separate streams, so changing targetWidth leaves the inputs
// as they were.
constexpr std::uint64_t kInputStream = 0x1A7A;
constexpr std::uint64_t kTargetStream = 0x7A26;
// 1 Gi floats (4 GiB) per array: well beyond any sensible recipe, and a clear message
// instead of an allocation failure when a setting has a typo.
constexpr std::int64_t kMaxValues = std::int64_t{1} << 30;

void fillNormal(std::vector<float>& v, std::int64_t n, std::uint64_t seed, std::uint64_t stream) {
  Rng rng(seed, stream);
  v.resize(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
}

}  // namespace

DataSplit makeSyntheticRegression(const DataOptions& opt) {
  const std::int64_t count = opt.batches * opt.batchSize;
  const std::int64_t targetDim = opt.targetWidth > 0 ? opt.targetWidth : opt.width;
  if (opt.batches <= 0 || opt.batchSize <= 0 || opt.width <= 0 || opt.targetWidth < 0)
    throw DataError("synthetic data: data.batches, train.batch_size and model.width must be > 0 (got " +
                    std::to_string(opt.batches) + ", " + std::to_string(opt.batchSize) + ", " +
                    std::to_string(opt.width) + ")");
  if (count > kMaxValues / opt.width || count > kMaxValues / targetDim)
    throw DataError("synthetic data: data.batches * train.batch_size * model.width = " + std::to_string(opt.batches) +
                    " * " + std::to_string(opt.batchSize) + " * " + std::to_string(std::max(opt.width, targetDim)) +
                    " values is too large (limit 2^30)");

  DataSplit split;
  Dataset& train = split.train;
  train.name = "synthetic/train";
  train.sampleShape = {opt.width};
  train.count = count;
  train.targetDim = targetDim;
  fillNormal(train.features, count * opt.width, opt.seed, kInputStream);
  fillNormal(train.targets, count * targetDim, opt.seed, kTargetStream);

  split.test.name = "synthetic/test";
  split.test.sampleShape = train.sampleShape;
  split.test.targetDim = targetDim;
  return split;
}

}  // namespace amp
