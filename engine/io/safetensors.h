// The safetensors format (Hugging Face's), written and read without the library: an 8-byte
// little-endian header length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets"},
// "__metadata__": {...}} padded with spaces to a multiple of 8, then the raw little-endian bytes.
// PyTorch's safetensors.torch.load_file() and numpy read what writeSafetensors() produces.
#pragma once

#include <QByteArray>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/core/tensor.h"  // Shape, DType

namespace amp {

// One-line messages saying what is wrong and where ("tensor '0.weight': ...").
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SafeTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  QByteArray data;  // raw little-endian elements, shapeNumel(shape) * dtypeSize(dtype) bytes
};

struct SafetensorsFile {
  std::vector<SafeTensor> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;

  const SafeTensor* find(const std::string& name) const;
};

// "F32", "F16", "BF16", "I32", "U8" (the format's names), or nothing for a dtype it cannot name.
std::optional<std::string> safetensorsDtypeName(DType t);
std::optional<DType> parseSafetensorsDtype(const std::string& s);

// Throws SafetensorsError for duplicate names, a byte count that does not match the shape, or
// the reserved name "__metadata__". Data is laid out by element size (largest first), then by
// name, so every tensor starts aligned to its element size, as the reference writer does.
QByteArray writeSafetensors(const std::vector<SafeTensor>& tensors,
                            const std::map<std::string, std::string>& metadata = {});

// Validates everything (header length within the file, JSON, known dtypes, offsets in range,
// contiguous and non-overlapping, byte counts = numel * element size) before returning.
SafetensorsFile readSafetensors(const QByteArray& bytes);

}  // namespace amp
