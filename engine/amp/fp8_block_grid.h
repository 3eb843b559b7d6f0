// The block scales of one quantised tensor as a grid over its shape (issue 39's "block scales"
// view): for each block the log2 of the scale the quantiser gives it and the log2 of its amax,
// so a reader sees which block an outlier sits in and what its scale did. Computed from the
// values before quantising and the spec with kernels/common/block_scaling.h's functions, the
// quantiser's own, so each scale is the one quantizeToCodes writes (tests/unit/test_fp8_block_grid).
#pragma once

#include <cstdint>

#include "engine/amp/fp8_quantize.h"
#include "engine/amp/fp8_record.h"

namespace amp {

// The most cells a grid keeps along each axis: a bigger tensor's blocks are grouped (by the
// block of largest amax) so a record holds at most 64 x 64 cells, two numbers each.
constexpr int kFp8BlockGridMaxCells = 64;

// x: rows x cols, row-major, before quantising (before the Hadamard transform too: it is applied
// here as the quantiser applies it). An empty grid for per-tensor specs.
Fp8BlockGrid fp8BlockGrid(const float* x, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                          int maxCells = kFp8BlockGridMaxCells);

}  // namespace amp
