// safetensors (model.safetensors, optimizer.safetensors, `ampstudio-cli convert`): readSafetensors
// on the input bytes. Refusals are SafetensorsErrors; what it accepts must have every tensor's
// bytes match its shape, and must come back unchanged through writeSafetensors (the checkpoint
// writer) and readSafetensors again.
#include <cstdint>
#include <string>

#include "engine/io/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  SafetensorsFile file;
  try {
    file = readSafetensors(fuzz::bytesOf(data, size));
  } catch (const SafetensorsError& e) {
    fuzz::refused(e);
    return 0;
  }
  for (const SafeTensor& t : file.tensors) {
    double numel = 1;
    for (auto d : t.shape) numel *= static_cast<double>(d);
    if (numel * static_cast<double>(dtypeSize(t.dtype)) != static_cast<double>(t.data.size()))
      fuzz::fail("tensor '" + t.name + "': " + std::to_string(t.data.size()) + " bytes for shape " + shapeString(t.shape));
  }
  QByteArray again;
  try {
    again = writeSafetensors(file.tensors, file.metadata);
  } catch (const SafetensorsError& e) {
    fuzz::fail(std::string("writeSafetensors refuses what readSafetensors accepted: ") + e.what());
  }
  SafetensorsFile back;
  try {
    back = readSafetensors(again);
  } catch (const SafetensorsError& e) {
    fuzz::fail(std::string("readSafetensors refuses what writeSafetensors wrote: ") + e.what());
  }
  if (back.metadata != file.metadata || back.tensors.size() != file.tensors.size())
    fuzz::fail("metadata or tensor count changed through write + read");
  for (std::size_t i = 0; i < back.tensors.size(); ++i) {
    const SafeTensor &a = file.tensors[i], &b = back.tensors[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.data != b.data)
      fuzz::fail("tensor '" + a.name + "' changed through write + read");
  }
  return 0;
}
