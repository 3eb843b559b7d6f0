// Raw zip bytes, as a checkpoint file on disk: readZipEntries (every entry, CRC-checked), then
// the cheap checkpoint readers the CLI and the app call first, readCheckpointInfo and
// checkpointMetrics. Every refusal is a CheckpointError. (fuzz_checkpoint goes past the zip
// layer into loadCheckpoint; the experiment and bundle targets also feed raw zips.)
#include <cstdint>

#include "engine/io/checkpoint.h"
#include "engine/io/zip_entries.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  static const QString path = fuzz::scratchPath(QStringLiteral("step-1.zip"));
  fuzz::writeFile(path, fuzz::bytesOf(data, size));
  try {
    const auto entries = readZipEntries(path);
    // A name given twice is refused, so the map holds every entry once.
    const auto manifestOnly = readZipEntries(path, {QStringLiteral("manifest.json")});
    if (manifestOnly.size() > 1 || (manifestOnly.size() == 1 && !entries.count(QStringLiteral("manifest.json"))))
      fuzz::fail("readZipEntries(only manifest.json) returned other entries");
  } catch (const CheckpointError& e) {
    fuzz::refused(e);
    return 0;
  }
  try {
    (void)readCheckpointInfo(path);
    (void)checkpointMetrics(path);
  } catch (const CheckpointError& e) {
    fuzz::refused(e);
  }
  return 0;
}
