#include "engine/core/tensor.h"

#include <sstream>
#include <stdexcept>

namespace amp {

std::int64_t shapeNumel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shapeString(const Shape& s) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ')';
  return os.str();
}

Buffer::Buffer(BufferAllocator& owner, std::size_t bytes, MemCategory category)
    : m_owner(&owner), m_data(nullptr), m_bytes(bytes), m_category(category) {
  m_data = owner.allocateBytes(bytes);
  owner.memory().onAlloc(category, static_cast<std::int64_t>(bytes));
}

Buffer::~Buffer() {
  m_owner->memory().onFree(m_category, static_cast<std::int64_t>(m_bytes));
  m_owner->freeBytes(m_data, m_bytes);
}

const char* memoryFormatName(MemoryFormat f) {
  return f == MemoryFormat::ChannelsLast ? "channels-last" : "contiguous";
}

Tensor::Tensor(std::shared_ptr<Buffer> buffer, Shape shape, DType dtype, MemoryFormat format)
    : m_buffer(std::move(buffer)), m_shape(std::move(shape)), m_numel(shapeNumel(m_shape)),
      m_dtype(dtype), m_format(format) {
  if (m_buffer && m_buffer->bytes() < bytes())
    throw std::logic_error("tensor " + shapeString(m_shape) + " larger than its buffer");
  if (format == MemoryFormat::ChannelsLast && m_shape.size() != 4)
    throw std::logic_error("a channels-last tensor must be (N, C, H, W), got " +
                           shapeString(m_shape));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shapeNumel(shape) != m_numel)
    throw std::invalid_argument("cannot reshape " + shapeString(m_shape) + " to " +
                                shapeString(shape));
  if (m_format == MemoryFormat::ChannelsLast) {
    if (shape != m_shape)
      throw std::logic_error("cannot reshape the channels-last tensor " + shapeString(m_shape) +
                             " to " + shapeString(shape) +
                             ": its bytes are in N, H, W, C order (make it contiguous first)");
    return *this;
  }
  return Tensor(m_buffer, std::move(shape), m_dtype);
}

}  // namespace amp
