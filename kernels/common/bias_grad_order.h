// The summation order of a bias gradient, db (n) = the column sums of dy (m, n), shared by the
// CPU backend and the CUDA kernel so that both give the same bits.
//
// Why blocked: one running sum per column down all m rows is one long dependent chain per
// column, and only n threads of work on a GPU (4096 columns of 512 rows took 222 us on an
// H200, a third of a whole AMP step). Rows are therefore taken in blocks of kBiasGradRowBlock:
// each block's column sums start from 0 and add its rows in order, in fp32; the block sums are
// then added, also from 0 and in block order. Blocks run in parallel; the order, and so the
// result, is fixed by the shape alone, never by the thread or block count.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

// Rows per block: long enough that a block's loads pipeline, short enough that even a batch of
// 512 rows gives 16 independent partial sums per column.
constexpr std::int64_t kBiasGradRowBlock = 32;

AMP_HD constexpr std::int64_t biasGradRowBlocks(std::int64_t m) {
  return (m + kBiasGradRowBlock - 1) / kBiasGradRowBlock;
}

// The reference form of the order for one column (tests, and where speed does not matter):
// at(r) is the row-r value of the column, widened to fp32.
template <class At>
AMP_HD float biasGradColumnSum(std::int64_t m, At&& at) {
  float total = 0.f;
  for (std::int64_t b = 0; b < biasGradRowBlocks(m); ++b) {
    const std::int64_t r0 = b * kBiasGradRowBlock;
    const std::int64_t r1 = r0 + kBiasGradRowBlock < m ? r0 + kBiasGradRowBlock : m;
    float part = 0.f;
    for (std::int64_t r = r0; r < r1; ++r) part += at(r);
    total += part;
  }
  return total;
}

}  // namespace amp
