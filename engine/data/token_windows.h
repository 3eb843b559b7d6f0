// The inputs and labels of token-data samples (dataset.h: Dataset::isTokenData): sample i is the
// window of T + 1 bytes at windowStart(i); its inputs are bytes 0..T-1, its labels bytes 1..T
// (the next byte at each position). One place makes them, for training batches and evaluation.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/data/dataset.h"

namespace amp {

struct TokenWindows {
  std::vector<std::int32_t> inputs, labels;  // n * T each, window after window
};

// Samples [first, first + n) of `data`.
TokenWindows tokenWindows(const Dataset& data, std::int64_t first, std::int64_t n);
// Appends sample `i`'s inputs and labels (T each) to the two vectors.
void appendTokenWindow(const Dataset& data, std::int64_t i, std::vector<std::int32_t>& inputs,
                       std::vector<std::int32_t>& labels);

}  // namespace amp
