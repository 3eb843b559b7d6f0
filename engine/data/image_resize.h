// Resizing 8-bit images to a data set's size, with antialiasing: PIL's BILINEAR resample (what
// torchvision's Resize((s, s)) does on PIL images), a separable triangle filter whose support
// widens by the downscale factor, so a large photo shrunk to 32x32 averages over the source
// pixels each output pixel covers instead of sampling a few of them (aliasing).
//
// Per axis, output pixel i of an in -> out resize (scale = in / out) is centred on source
// coordinate c = (i + 0.5) * scale; with f = max(scale, 1) the weights are
// w(j) = max(0, 1 - |(j + 0.5 - c) / f|) for the source pixels j the triangle covers (only those
// inside the image: at the borders the weights are renormalised to sum to 1). Upscaling (f = 1)
// is plain bilinear interpolation with half-pixel centres; equal sizes copy. Rows, then columns;
// unlike PIL (which rounds to 8 bits after each pass), the intermediate stays in float and is
// rounded once, to nearest, at the end, so results can differ from PIL's by 1.
#pragma once

#include <cstdint>
#include <vector>

namespace amp {

// `src`: height x width x channels, interleaved (H, W, C). Returns outHeight x outWidth x channels,
// interleaved. Sizes must be > 0.
std::vector<std::uint8_t> resizeImage(const std::uint8_t* src, int width, int height, int channels,
                                      int outWidth, int outHeight);

// The weights of one axis (for tests and the two passes): output pixel i takes
// sum_k weights[i][k] * src[first[i] + k].
struct ResampleAxis {
  std::vector<int> first;
  std::vector<std::vector<float>> weights;
};
ResampleAxis resampleAxis(int in, int out);

}  // namespace amp
