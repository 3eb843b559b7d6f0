// What fuzz_experiment and fuzz_run_bundle share: the input as a file for openAnything (File >
// Open, `ampstudio-cli report/export`), either raw zip bytes (first byte even) or zip entries
// written with our writer (first byte odd; "<name>\n<bytes>" parts, see fuzz_support.h) so that
// the fuzzer gets past the zip layer's CRC checks to the manifest and the run files.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/io/checkpoint_manifest.h"
#include "engine/io/experiment_file.h"
#include "tests/fuzz/fuzz_support.h"

namespace amp::fuzz {

// The file to open, or "" when our writer cannot store these entries.
inline QString zipFileFromInput(const std::uint8_t* data, std::size_t size, const QString& name) {
  const QString path = scratchPath(name);
  if (size == 0) return {};
  const QByteArray rest = bytesOf(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    writeFile(path, rest);
    return path;
  }
  try {
    writeZipAtomically(path, entriesFromParts(rest));
  } catch (const CheckpointError& e) {
    fuzz::refused(e);
    return {};
  }
  return path;
}

// openAnything, whose every refusal is an ExperimentError; nothing when it refuses.
inline std::optional<std::vector<ExperimentRun>> openRuns(const QString& path) {
  try {
    return openAnything(path);
  } catch (const ExperimentError& e) {
    fuzz::refused(e);
    return std::nullopt;
  }
}

}  // namespace amp::fuzz
