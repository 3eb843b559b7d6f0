// How much memory a run will need, from its config and the data set's shapes alone (no tensor
// is allocated): parameters, master weights, gradients, optimizer state, the activations a
// batch keeps for backward (with their 16-bit copies), the data set and the step's workspace.
// The Trainer refuses a config whose estimate exceeds the memory available, with a one-line
// message naming both, instead of failing with std::bad_alloc halfway; the app shows the
// summary beside its Start button.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/config/run_config.h"
#include "engine/core/tensor.h"

namespace amp {

struct MemoryEstimate {
  std::int64_t parameterCount = 0;
  // Bytes, by MemoryTracker category (what the tracker will show at the step's peak).
  std::int64_t weights = 0;         // computed-with weights (16-bit casts under autocast)
  std::int64_t masterWeights = 0;   // fp32 masters beside them
  std::int64_t gradients = 0;
  std::int64_t optimizerState = 0;  // momentum, Adam moments
  std::int64_t activations = 0;     // a batch's saved forward values and its gradients
  std::int64_t workspace = 0;       // batch uploads, the training set on a device
  // fp32 copies of one emulated 16-bit GEMM's or convolution's operands, while it runs
  // (Workspace in the tracker; only where the backend emulates the compute dtype).
  std::int64_t emulationScratch = 0;
  // Blocked-layout (and, emulated, fp32) copies of one convolution's operands while its two
  // backward passes run (Workspace in the tracker; CPU backend, oneDNN).
  std::int64_t convScratch = 0;
  std::int64_t dataSet = 0;         // the loaded data set in host memory (not tracked)
  std::string optimizerStateName;   // "Adam state", "momentum"

  // What the run's backend allocates at its peak (MemoryTracker's totalPeak), and that plus the
  // host data set. The emulation scratch peaks during one op, when backward has already freed
  // part of the activations (about two thirds, measured on MLPs and CNNs).
  // A convolution's copies peak during the backward pass through the middle of a network, with
  // about two thirds of the activations still held (measured on ResNets).
  std::int64_t tracked() const {
    return weights + masterWeights + gradients + optimizerState + workspace +
           std::max({activations, emulationScratch + activations / 3, convScratch + 2 * activations / 3});
  }
  std::int64_t total() const { return tracked() + dataSet; }
  // "≈ 34.4 GiB (parameters 16.0 GiB, Adam state 32.0 GiB, gradients 16.0 GiB, …)": the
  // tracked bytes with the largest parts first.
  std::string summary() const;
};

// The shapes of a loaded data set that an estimate needs.
struct DataShapes {
  Shape sample;               // per-sample feature shape
  std::int64_t outputs = 0;   // classes or regression width
  std::int64_t trainCount = 0, testCount = 0;
  bool classification = true;
  // The backend emulates the 16-bit compute dtype (the CPU without native fp16/bf16): its GEMMs
  // and convolutions then hold fp32 copies of their operands while they run.
  bool emulatedCompute = false;
};

MemoryEstimate estimateMemory(const RunConfig& c, const DataShapes& data);
// The same, loading the config's data set to learn its shapes and asking the config's backend
// whether it emulates 16-bit compute (throws DataError/ConfigError as the Trainer would). For
// the UI's estimate beside Start.
MemoryEstimate estimateMemory(const RunConfig& c);
// Its two parts, for callers that estimate several configs over one data set (a lesson's
// variants): the data set's shapes (loads it; throws as the Trainer would) and whether the
// config's backend emulates its 16-bit compute dtype.
DataShapes dataShapesOf(const RunConfig& c);
bool emulatesCompute(const RunConfig& c);
// The options the Trainer loads the config's data set with (seed, batch size, recipe width).
DataOptions dataOptionsOf(const RunConfig& c);

// Bytes a generated data set (spirals, circles, blobs) takes while it is made and split into
// train and test copies, known before generating it; nothing for data read from files (their
// readers check what headers declare) or the recipe's synthetic batches (capped at 2^30 values).
std::optional<std::int64_t> generatedDataBytes(const DataOptions& d);
// Throws ConfigError ("data.samples=10000000000 needs ≈ 335 GiB to generate; 21 GiB
// available") before a data set that cannot fit is generated, or an image data set decoded
// ("data.image_size=1024, data.channels=3 (3 x 1024 x 1024 a sample): the 2000 images of ...
// need ≈ 41 GiB to load; 21 GiB available"). The Trainer and the UI's Start check both ask, so
// data.samples=1e10 is refused rather than filling memory.
void refuseDataThatCannotFit(const DataOptions& d);

// The shapes of a generated data set (the recipe's synthetic batches, spirals, circles, blobs),
// from its options alone, or of an image data set (cifar10, images) from its files' listing or
// sizes (nothing is decoded; throws DataError as loading would); nothing for other data read
// from files.
std::optional<DataShapes> generatedDataShapes(const DataOptions& d);

// Host memory available to a new allocation (/proc/meminfo MemAvailable); nothing where unknown.
std::optional<std::int64_t> hostMemoryAvailable();

// The model settings a message names: "model.hidden=65536,65536", "model.width=4096 x 3".
std::string modelSettingsText(const ModelConfig& m);

// "model.hidden=… needs ≈ 34.4 GiB (…); 21.3 GiB available" when `needed` exceeds `available`.
std::optional<std::string> memoryRefusal(const RunConfig& c, const MemoryEstimate& e,
                                         std::int64_t needed, std::int64_t available,
                                         const std::string& where);

}  // namespace amp
