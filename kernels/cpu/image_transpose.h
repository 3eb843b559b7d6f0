// NCHW <-> NHWC transposes of image tensors on the CPU (engine/core/tensor.h, MemoryFormat):
// the CPU backend's format conversions, its host boundary for channels-last tensors, and its
// emulation of a channels-last device (cpu_backend_layout.cpp). Bytes are moved, never
// converted, so any dtype of 1, 2 or 4 bytes is exact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace amp::cpu {

// dst = src with the layout changed: toNhwc moves an (n, c, hw) tensor to (n, hw, c), otherwise
// (n, hw, c) to (n, c, hw). src and dst must not overlap. elementBytes: 1, 2 or 4.
void transposeImage(bool toNhwc, std::size_t elementBytes, const void* src, void* dst,
                    std::int64_t n, std::int64_t c, std::int64_t hw);

}  // namespace amp::cpu
