// 2-D teaching sets generated from a seed: small enough to train in seconds on a CPU and to
// plot whole (decision boundaries), hard enough that a linear model visibly fails on two of
// them. Points lie in roughly [-1, 1]^2; `noise` is the std of Gaussian jitter added to each
// coordinate. Samples are split as evenly as possible between the classes, in class order
// (splitTrainTest shuffles).
#pragma once

#include <cstdint>

#include "engine/data/dataset.h"

namespace amp {

// Two interleaved spirals, 1.5 turns each, radius growing from 0 to 1 (classes 0 and 1).
Dataset makeSpirals(std::int64_t samples, double noise, std::uint64_t seed);

// An outer circle of radius 1 (class 0) around an inner one of radius 0.5 (class 1).
Dataset makeCircles(std::int64_t samples, double noise, std::uint64_t seed);

// `classes` round Gaussian blobs of std `noise`, centred evenly on the unit circle with a
// seeded rotation.
Dataset makeBlobs(std::int64_t samples, int classes, double noise, std::uint64_t seed);

// opt.name in {spirals, circles, blobs}: generate opt.samples (0 = 1000) points and split
// them by opt.testFraction (stratified, seeded).
DataSplit makeToyDataset(const DataOptions& opt);

}  // namespace amp
