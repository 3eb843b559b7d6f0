// The CUDA step loss's blocked order (kernels/common/row_sum_order.h): every row once, lane by
// lane, and the order itself (which rounding shows).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/common/row_sum_order.h"

using namespace amp;

TEST(RowSumOrder, EveryRowCountsOnce) {
  for (std::int64_t m : {1, 255, 256, 257, 1000, 32768}) {
    std::vector<double> rows(static_cast<std::size_t>(m));
    for (std::int64_t r = 0; r < m; ++r) rows[std::size_t(r)] = double(r + 1);  // exact sums
    EXPECT_EQ(rowSumBlocked(rows.data(), m), double(m) * double(m + 1) / 2) << m;
  }
}

// 1 + 2^-53 + ... : row order loses every small term (1 + 2^-53 rounds back to 1); the blocked
// order first adds lane 1's small terms among themselves, where they survive.
TEST(RowSumOrder, LanesAddTheirRowsFirstThenLanesInOrder) {
  const std::int64_t m = 257 + 256;  // lane 0: rows 0, 256, 512; lane 1: rows 1, 257
  std::vector<double> rows(static_cast<std::size_t>(m), 0.0);
  rows[0] = 1.0;
  rows[1] = rows[257] = 0x1p-53;
  double rowOrder = 0;
  for (double v : rows) rowOrder += v;
  EXPECT_EQ(rowOrder, 1.0);
  EXPECT_EQ(rowSumLanePartial(rows.data(), m, 1), 0x1p-52);
  EXPECT_EQ(rowSumBlocked(rows.data(), m), 1.0 + 0x1p-52);
}
