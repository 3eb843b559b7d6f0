// Toy set generation. All randomness comes from amp::Rng so a seed gives the same points on
// every platform and library version.
#include "engine/data/toy_datasets.h"

#include <cmath>
#include <numbers>

#include "engine/data/rng.h"

namespace amp {
namespace {

// Separate streams per generator so e.g. spirals and circles with one seed are unrelated.
constexpr std::uint64_t kSpiralsStream = 0x5B1A;
constexpr std::uint64_t kCirclesStream = 0xC1C1;
constexpr std::uint64_t kBlobsStream = 0xB10B;
constexpr std::int64_t kDefaultSamples = 1000;
constexpr int kDefaultBlobs = 3;

// A 2-D classification set with `samples` points spread evenly over `classes`; `point`
// fills (x, y) for the i-th point of class c out of nc.
template <typename PointFn>
Dataset makePlanar(const char* name, std::int64_t samples, int classes, PointFn point) {
  Dataset d;
  d.name = name;
  d.sampleShape = {2};
  d.count = samples;
  d.numClasses = classes;
  d.features.reserve(static_cast<std::size_t>(2 * samples));
  d.labels.reserve(static_cast<std::size_t>(samples));
  for (int c = 0; c < classes; ++c) {
    d.classNames.push_back("class " + std::to_string(c));
    const std::int64_t nc = samples / classes + (c < samples % classes ? 1 : 0);
    for (std::int64_t i = 0; i < nc; ++i) {
      double x = 0, y = 0;
      point(c, i, nc, x, y);
      d.features.push_back(static_cast<float>(x));
      d.features.push_back(static_cast<float>(y));
      d.labels.push_back(c);
    }
  }
  return d;
}

}  // namespace

Dataset makeSpirals(std::int64_t samples, double noise, std::uint64_t seed) {
  Rng rng(seed, kSpiralsStream);
  constexpr double kSweep = 1.5 * 2.0 * std::numbers::pi;  // 1.5 turns
  return makePlanar("spirals", samples, 2, [&](int c, std::int64_t, std::int64_t, double& x, double& y) {
    // sqrt spreads points evenly along the arc instead of crowding the centre.
    const double t = std::sqrt(rng.uniform()) * kSweep;
    const double r = t / kSweep;
    const double angle = t + c * std::numbers::pi;  // the second arm is the first turned by 180°
    x = r * std::cos(angle) + noise * rng.normal();
    y = r * std::sin(angle) + noise * rng.normal();
  });
}

Dataset makeCircles(std::int64_t samples, double noise, std::uint64_t seed) {
  Rng rng(seed, kCirclesStream);
  return makePlanar("circles", samples, 2, [&](int c, std::int64_t, std::int64_t, double& x, double& y) {
    const double r = c == 0 ? 1.0 : 0.5;
    const double angle = rng.uniform() * 2.0 * std::numbers::pi;
    x = r * std::cos(angle) + noise * rng.normal();
    y = r * std::sin(angle) + noise * rng.normal();
  });
}

Dataset makeBlobs(std::int64_t samples, int classes, double noise, std::uint64_t seed) {
  Rng rng(seed, kBlobsStream);
  const double rotation = rng.uniform() * 2.0 * std::numbers::pi;
  return makePlanar("blobs", samples, classes, [&](int c, std::int64_t, std::int64_t, double& x, double& y) {
    const double angle = rotation + 2.0 * std::numbers::pi * c / classes;
    x = std::cos(angle) + noise * rng.normal();
    y = std::sin(angle) + noise * rng.normal();
  });
}

DataSplit makeToyDataset(const DataOptions& opt) {
  const std::int64_t n = opt.samples > 0 ? opt.samples : kDefaultSamples;
  Dataset all;
  if (opt.name == "spirals") all = makeSpirals(n, opt.noise, opt.seed);
  else if (opt.name == "circles") all = makeCircles(n, opt.noise, opt.seed);
  else if (opt.name == "blobs") all = makeBlobs(n, opt.classes > 0 ? opt.classes : kDefaultBlobs, opt.noise, opt.seed);
  else throw DataError("data.name = '" + opt.name + "': not a toy data set (spirals, circles, blobs)");
  if (n < all.numClasses)
    throw DataError("data.samples = " + std::to_string(n) + ": " + opt.name + " needs at least " +
                    std::to_string(all.numClasses) + " samples (one per class)");
  return splitTrainTest(all, opt.testFraction, opt.seed, opt.name);
}

}  // namespace amp
