// NCHW 2-D convolution geometry (groups 1, dilation 1): the one description the Backend
// interface, the CPU kernels and (later) the CUDA kernels share.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

struct ConvGeometry {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // input
  std::int64_t k = 0, r = 0, s = 0;         // output channels, kernel height and width
  std::int64_t strideH = 1, strideW = 1, padH = 0, padW = 0;
  AMP_HD std::int64_t outH() const { return (h + 2 * padH - r) / strideH + 1; }
  AMP_HD std::int64_t outW() const { return (w + 2 * padW - s) / strideW + 1; }
  // Multiply-adds of one pass (forward, backward-data and backward-weights all do this many).
  AMP_HD double flops() const {
    return 2.0 * double(n) * double(k) * double(outH()) * double(outW()) * double(c) * double(r) *
           double(s);
  }
  // Every size positive, padding non-negative, the kernel within the padded input (the output
  // size's division truncates toward zero, so a too-large kernel could still give outH() 1), and
  // an output of at least 1x1.
  AMP_HD bool valid() const {
    return n > 0 && c > 0 && h > 0 && w > 0 && k > 0 && r > 0 && s > 0 && strideH > 0 &&
           strideW > 0 && padH >= 0 && padW >= 0 && h + 2 * padH >= r && w + 2 * padW >= s &&
           outH() > 0 && outW() > 0;
  }
};

}  // namespace amp
