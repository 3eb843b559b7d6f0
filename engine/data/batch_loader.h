// Mini-batches of a host Dataset, like PyTorch's DataLoader: a new seeded permutation every
// epoch (shuffle=True), the last partial batch kept unless dropLast. Batches are plain host
// vectors; uploading them is the trainer's job. Image batches can be augmented as they are
// copied (random crop, horizontal flip: augment.h), on the loader's thread, never the GUI's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/augment.h"
#include "engine/data/dataset.h"
#include "engine/data/rng.h"

namespace amp {

struct Batch {
  std::vector<float> x;                // size * featureSize, row-major
  std::vector<std::int32_t> labels;    // size (classification; size * sequence for token data)
  std::vector<std::int32_t> tokens;    // token data: size * sequence input bytes (x stays empty)
  std::vector<float> targets;          // size * targetDim (regression), else empty
  std::int64_t size = 0;               // rows in this batch (the last one may be short)
  Shape xShape;                        // {size, sampleShape...}
  std::vector<std::int64_t> rows;      // the dataset rows it holds, in order
};

struct BatchLoaderOptions {
  std::int64_t batchSize = 64;
  bool shuffle = true;     // false: file/generation order every epoch (the synthetic recipe)
  bool dropLast = false;   // true: skip the final partial batch
  std::uint64_t seed = 0;
  // false: batches carry only `rows`, `size` and `xShape` (the data already sits on the device).
  bool copyData = true;
  // Augmentation of the copied rows (augment.h; data.augment_crop, data.augment_flip), drawn
  // from (seed, epoch, batch position) so reset/restore give the same batches. Needs copyData
  // and samples of shape {C, H, W} with augmentCrop <= H and W.
  int augmentCrop = 0;
  bool augmentFlip = false;
};

// Everything needed to continue exactly where a run stopped. count and batchSize are kept
// to refuse restoring into a loader over different data.
struct BatchLoaderState {
  std::int64_t epoch = 0;
  std::int64_t position = 0;  // batches already returned in this epoch
  Rng::State rng{};           // generator state the epoch's permutation was drawn from
  std::int64_t count = 0;
  std::int64_t batchSize = 0;
};

class BatchLoader {
 public:
  // Keeps a reference to `data`, which must outlive the loader. Throws DataError for a
  // batch size <= 0, or augmentation the data or options cannot take.
  BatchLoader(const Dataset& data, const BatchLoaderOptions& opt);

  // Fills `out` with the next batch of the current epoch and returns true. At the end of the
  // epoch returns false and moves to the next epoch, so `while (loader.next(b))` is one epoch.
  // Vectors in `out` are resized, not reallocated, when their capacity suffices.
  bool next(Batch& out);

  std::int64_t epoch() const { return m_epoch; }
  std::int64_t position() const { return m_position; }
  std::int64_t batchesPerEpoch() const;

  // Start `epoch` from its first batch. Each epoch's permutation depends only on the seed and
  // the epoch number, so reset(e) gives the same batches as reaching epoch e by iterating.
  void reset(std::int64_t epoch = 0);

  BatchLoaderState state() const;
  // Why `s` cannot be restored here (other data or batch size, a position outside the epoch, a
  // zeroed generator), or nothing. Callers that must change nothing before validating ask first.
  std::optional<std::string> problemWith(const BatchLoaderState& s) const;
  // Throws DataError with problemWith's message.
  void restore(const BatchLoaderState& s);

 private:
  void beginEpoch(std::int64_t epoch, const Rng::State& rng);
  Rng::State epochRngState(std::int64_t epoch) const;

  const Dataset* m_data;
  BatchLoaderOptions m_opt;
  std::int64_t m_epoch = 0;
  std::int64_t m_position = 0;
  Rng::State m_epochRng{};
  std::vector<std::int64_t> m_order;
  std::vector<float> m_augmentScratch;
};

}  // namespace amp
