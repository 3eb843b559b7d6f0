// What one quantised tensor looked like at one step (StepMetrics::fp8): recorded for each
// quantised Linear layer's input (x), weight (w) and output gradient (dy), in the orientation of
// its first GEMM (x and w as the forward GEMM takes them, dy as the input-gradient GEMM does).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace amp {

// A block recipe's scales laid over the tensor's shape (histogram steps; fp8_block_grid.h makes
// it): grid cell (i, j) covers tensor rows [i * cellRows * blockRows, ...) and columns
// [j * cellCols * blockCols, ...). Big tensors are downsampled so a record stays small: a cell
// then holds cellRows x cellCols blocks and shows the one of largest amax (so an outlier's block
// is never averaged away), its scale and its amax together.
struct Fp8BlockGrid {
  std::int64_t tensorRows = 0, tensorCols = 0;  // the tensor's shape, as its first GEMM takes it
  int blockRows = 1, blockCols = 1;  // one block's extent (1 x 32, 32 x 1 down columns, 128 x 128)
  int cellRows = 1, cellCols = 1;    // blocks per cell along each axis (1 x 1: not downsampled)
  int rows = 0, cols = 0;            // cells
  // "e8m0" (MX: the block divides by 2^e), "fp32" (1x128 / 128x128: the block multiplies by s),
  // "e4m3" (NVFP4: the block's scale s, values x S / s).
  std::string scaleFormat;
  std::vector<float> scaleLog2;  // rows x cols, row-major: log2 of the block's scale (NaN: NaN scale)
  std::vector<float> amaxLog2;   // the same cells: log2 of the block's amax (-inf: all zero)
  bool empty() const { return rows == 0 || cols == 0; }
};

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
  Fp8BlockGrid blockGrid;  // block recipes, histogram steps: the scales over the tensor's shape
  // "What if" (fp8.what_if): the same figures for the other recipe on the same values.
  bool hasWhatIf = false;
  double whatIfUnderflow = 0, whatIfOverflow = 0, whatIfSqnrDb = 0;
  // nvfp4, histogram steps, a weight-gradient operand (x or dy): its copy for that GEMM (blocks
  // down the columns) quantised twice from the same values, without and with the 16x16 random
  // Hadamard transform, whichever the run trains with. The other figures above are the forward's
  // or the input gradient's copy, which the transform never touches: only these show what it does.
  bool hasWgradRht = false;
  double wgradPlainSqnrDb = 0, wgradPlainUnderflow = 0, wgradRhtSqnrDb = 0, wgradRhtUnderflow = 0;
};

}  // namespace amp
