// A checkpoint's manifest.json: manifestFromJson on the input bytes. Refusals are
// CheckpointErrors; what it accepts must be written back by manifestToJson (as saveCheckpoint
// does) into a manifest that reads back to the same JSON.
#include <cstdint>
#include <string>

#include "engine/io/checkpoint_manifest.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  CheckpointInfo info;
  try {
    info = manifestFromJson(fuzz::bytesOf(data, size));
  } catch (const CheckpointError& e) {
    fuzz::refused(e);
    return 0;
  }
  const QByteArray written = manifestToJson(info);
  CheckpointInfo back;
  try {
    back = manifestFromJson(written);
  } catch (const CheckpointError& e) {
    fuzz::fail(std::string("manifestFromJson refuses what manifestToJson wrote: ") + e.what() + "\n" +
               written.toStdString());
  }
  if (manifestToJson(back) != written)
    fuzz::fail("manifest changed through write + read:\n" + written.toStdString() + "--- became ---\n" +
               manifestToJson(back).toStdString());
  return 0;
}
