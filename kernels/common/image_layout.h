// Where element (n, c, h, w) of an image tensor lives in memory, in either order the engine
// keeps images in (engine/core/tensor.h, MemoryFormat): NCHW (contiguous) or NHWC (channels-last,
// what cuDNN's tensor-core convolutions read and write without transposing). Shared by the CPU
// (transposes, the host boundary, the tests) and the CUDA kernels (batch norm, pooling, the
// channel bias, global average pooling, the transpose kernel), so both walk an image in the same
// way. The image ops view a tensor as planes (one per (n, c), n * C of them) of `planeSize` = H * W
// positions (h * W + w); a position's offset depends on the layout, never the order in which a
// kernel visits the positions of a plane: that order, and so every sum's rounding, is the same in
// both layouts.
//
// Index is the integer type a kernel computes in (32-bit unsigned where the tensor fits, as the
// NCHW kernels do); every function here is exact in it whenever the tensor's element count is.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

// Offset of position `position` (h * W + w) of plane `plane` (n * C + c).
template <class Index>
AMP_HD inline Index planeOffset(bool nhwc, Index plane, Index position, Index channels,
                                Index planeSize) {
  if (!nhwc) return plane * planeSize + position;
  const Index n = plane / channels, c = plane - n * channels;
  return (n * planeSize + position) * channels + c;
}

// Offset of (n, c, position): planeOffset without forming the plane index.
template <class Index>
AMP_HD inline Index imageOffset(bool nhwc, Index n, Index c, Index position, Index channels,
                                Index planeSize) {
  return nhwc ? (n * planeSize + position) * channels + c : (n * channels + c) * planeSize + position;
}

// The channel of the element at offset e (per-channel coefficients of elementwise passes).
template <class Index>
AMP_HD inline Index channelAt(bool nhwc, Index e, Index channels, Index planeSize) {
  return nhwc ? e % channels : (e / planeSize) % channels;
}

// The plane and position of the element at offset e: the inverse of planeOffset.
template <class Index>
AMP_HD inline void planeAndPositionAt(bool nhwc, Index e, Index channels, Index planeSize,
                                      Index& plane, Index& position) {
  if (!nhwc) {
    plane = e / planeSize;
    position = e - plane * planeSize;
    return;
  }
  const Index c = e % channels, pixel = e / channels;  // pixel = n * planeSize + position
  const Index n = pixel / planeSize;
  position = pixel - n * planeSize;
  plane = n * channels + c;
}

// The offset in the other layout of the element at offset e: a transpose writes element e of
// its destination from offset transposedOffset(destination is NHWC, e, ...) of its source. With
// toNhwc, e is an NHWC offset and the result the NCHW one; without, the reverse.
template <class Index>
AMP_HD inline Index transposedOffset(bool toNhwc, Index e, Index channels, Index planeSize) {
  Index plane = 0, position = 0;
  planeAndPositionAt(toNhwc, e, channels, planeSize, plane, position);
  return planeOffset(!toNhwc, plane, position, channels, planeSize);
}

// ---- max pooling -----------------------------------------------------------------------------
// An output of a pooling window: its plane and (row, col) in the output plane, from its offset.
template <class Index>
struct PoolOutput {
  Index plane, row, col;
};

template <class Index>
AMP_HD inline PoolOutput<Index> poolOutputAt(bool nhwc, Index o, Index channels, Index outH,
                                             Index outW) {
  Index plane = 0, position = 0;
  planeAndPositionAt(nhwc, o, channels, outH * outW, plane, position);
  const Index row = position / outW;
  return {plane, row, position - row * outW};
}

}  // namespace amp
