// manifest.json of a checkpoint: what the zip holds and everything needed to rebuild the run
// (config, counters, the loader's RNG state, the model's tensor list, the optimizer's scalars)
// plus a SHA-256 of every other entry, so corruption is reported instead of silently loaded.
#pragma once

#include <QByteArray>
#include <QString>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/config/run_config.h"
#include "engine/data/batch_loader.h"

namespace amp {

// Every checkpoint problem, as one line naming the file, the entry and what is wrong.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bumped whenever a reader of version N could misread what a writer of N+1 produces.
inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr const char* kCheckpointAppVersion = "0.1.0";  // PROJECT_VERSION

// Entry names inside the zip.
inline constexpr const char* kManifestEntry = "manifest.json";
inline constexpr const char* kModelEntry = "model.safetensors";
inline constexpr const char* kOptimizerEntry = "optimizer.safetensors";
inline constexpr const char* kScalerEntry = "scaler.json";
inline constexpr const char* kMetricsEntry = "metrics.jsonl";
// amp.mode=fp8 runs only: each delayed-scaling tensor's scale and amax history
// (Fp8Context::state), {"fc2.x": [scale, step, pending amax, history...]}.
inline constexpr const char* kFp8Entry = "fp8.json";

struct TensorSpec {
  std::string name;  // "0.weight"
  DType dtype = DType::F32;
  Shape shape;
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

struct EntryDigest {
  QByteArray sha256;  // lower-case hex
  std::int64_t bytes = 0;
};

// What readCheckpointInfo() returns: the manifest, parsed and checked.
struct CheckpointInfo {
  int formatVersion = kCheckpointFormatVersion;
  std::string appVersion = kCheckpointAppVersion;
  std::string created;  // ISO 8601, UTC
  RunConfig config;
  std::int64_t step = 0;            // optimizer steps done
  std::int64_t epoch = 0;           // the loader's epoch
  std::int64_t schedulerSteps = 0;  // LR scheduler steps taken (also on skipped steps)
  bool stopped = false;             // the run had diverged and stopped
  BatchLoaderState loader;          // position, RNG state, sizes
  std::string dataFingerprint;      // dataFingerprint() of the run's data; empty in older files
  std::vector<TensorSpec> parameters;  // in model order, as model.safetensors names them
  std::vector<TensorSpec> buffers;     // BatchNorm running statistics
  std::string optimizerName;
  std::map<std::string, double> optimizerScalars;  // Optimizer::stateScalars()
  std::map<std::string, EntryDigest> entries;      // every other entry -> its digest
};

QByteArray manifestToJson(const CheckpointInfo& m);
// Parses and checks types and ranges; the format version first, so a newer file gets that
// message and not a confusing one about a field. Throws CheckpointError("manifest.json: ...").
CheckpointInfo manifestFromJson(const QByteArray& bytes);

QByteArray sha256Hex(const QByteArray& data);

}  // namespace amp
