// A tensor: shape, dtype and a reference-counted buffer owned by the backend that made it.
// Layers and the trainer never touch the bytes; only backends read rawData() (the buffer may
// live in device memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/memory_tracker.h"

namespace amp {

using Shape = std::vector<std::int64_t>;

// How a tensor's bytes are ordered. Logical shapes never change: an image activation is (N, C,
// H, W) whatever its format, and every host-visible view (toHostFloat, uploads, checkpoints)
// speaks the logical, row-major order. Contiguous: row-major in the logical shape.
// ChannelsLast (rank-4 tensors only): bytes in N, H, W, C order, what cuDNN's tensor-core
// convolutions read and write without transposing (PyTorch's torch.channels_last).
enum class MemoryFormat : std::uint8_t { Contiguous, ChannelsLast };
const char* memoryFormatName(MemoryFormat f);  // "contiguous", "channels-last"

std::int64_t shapeNumel(const Shape& s);
std::string shapeString(const Shape& s);  // "(256, 1024)"

// Where buffers come from; a backend implements it. Frees go back to the same allocator.
class BufferAllocator {
 public:
  virtual ~BufferAllocator() = default;
  virtual void* allocateBytes(std::size_t bytes) = 0;
  virtual void freeBytes(void* p, std::size_t bytes) = 0;
  virtual MemoryTracker& memory() = 0;
};

// Move-only RAII buffer accounted in one category.
class Buffer {
 public:
  Buffer(BufferAllocator& owner, std::size_t bytes, MemCategory category);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return m_data; }
  std::size_t bytes() const { return m_bytes; }
  MemCategory category() const { return m_category; }

 private:
  BufferAllocator* m_owner;
  void* m_data;
  std::size_t m_bytes;
  MemCategory m_category;
};

class Tensor {
 public:
  Tensor() = default;
  // Throws std::logic_error for a ChannelsLast tensor that is not of rank 4.
  Tensor(std::shared_ptr<Buffer> buffer, Shape shape, DType dtype,
         MemoryFormat format = MemoryFormat::Contiguous);

  bool defined() const { return static_cast<bool>(m_buffer); }
  const Shape& shape() const { return m_shape; }
  std::int64_t dim(int i) const { return m_shape.at(i < 0 ? m_shape.size() + i : i); }
  int rank() const { return static_cast<int>(m_shape.size()); }
  std::int64_t numel() const { return m_numel; }
  DType dtype() const { return m_dtype; }
  std::size_t bytes() const { return static_cast<std::size_t>(m_numel) * dtypeSize(m_dtype); }
  MemCategory category() const { return m_buffer->category(); }
  MemoryFormat format() const { return m_format; }
  bool channelsLast() const { return m_format == MemoryFormat::ChannelsLast; }

  // A view of the same bytes with another shape of equal element count (Flatten, reshape).
  // A ChannelsLast tensor refuses any other shape (std::logic_error): its bytes are not in the
  // logical order, so the view would silently mix channels and pixels. Make it contiguous
  // through the backend first (Backend::contiguous).
  Tensor reshaped(Shape shape) const;
  // Identity of the underlying buffer (weight-cache keys, aliasing checks).
  const void* id() const { return m_buffer.get(); }

  // For backends only.
  void* rawData() const { return m_buffer ? m_buffer->data() : nullptr; }
  template <typename T>
  T* data() const { return static_cast<T*>(rawData()); }

 private:
  std::shared_ptr<Buffer> m_buffer;
  Shape m_shape;
  std::int64_t m_numel = 0;
  DType m_dtype = DType::F32;
  MemoryFormat m_format = MemoryFormat::Contiguous;
};

}  // namespace amp
