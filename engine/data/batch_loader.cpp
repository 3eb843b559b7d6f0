// Batch assembly is a memcpy per row, so an epoch costs about one pass over the features.
// Token data (text_dataset.h) is copied window by window, inputs and next-byte labels together.
#include "engine/data/batch_loader.h"

#include <algorithm>
#include <cstring>

#include "engine/data/token_windows.h"

namespace amp {
namespace {

// Base of the per-epoch streams: epoch e draws its permutation from Rng(seed, base + e).
constexpr std::uint64_t kEpochStreamBase = 0xE90C0000'00000000ULL;

// Token data must hold every window it names. A hand-made Dataset with a wrong count or start
// is refused when the loader is made, in a DataError naming it, not at whichever later batch
// happens to draw the bad window.
void checkTokenData(const Dataset& d) {
  const auto bytes = static_cast<std::int64_t>(d.tokens.size());
  const std::int64_t lastStart = bytes - d.sequence - 1;
  auto refuse = [&](const std::string& why) { throw DataError(d.name + ": " + why); };
  if (d.windowStarts.empty()) {
    if (d.count > 0 && d.count - 1 > lastStart)
      refuse(std::to_string(d.count) + " windows of " + std::to_string(d.sequence + 1) + " bytes do not fit in its " +
             std::to_string(bytes) + " bytes");
    return;
  }
  if (static_cast<std::int64_t>(d.windowStarts.size()) != d.count)
    refuse(std::to_string(d.windowStarts.size()) + " window starts for " + std::to_string(d.count) + " samples");
  for (const std::int64_t s : d.windowStarts)
    if (s < 0 || s > lastStart)
      refuse("a window at byte " + std::to_string(s) + " does not fit in its " + std::to_string(bytes) + " bytes");
}

// The windows of rows order[begin .. begin + n): input tokens and next-byte labels, made where
// evaluation makes them too (token_windows.h). clear() keeps the capacity, so a reused Batch
// is filled without reallocating.
void fillTokens(const Dataset& d, const std::vector<std::int64_t>& order, std::int64_t begin, std::int64_t n,
                Batch& out) {
  out.x.clear();
  out.targets.clear();
  out.tokens.clear();
  out.labels.clear();
  for (std::int64_t i = begin; i < begin + n; ++i)
    appendTokenWindow(d, order[static_cast<std::size_t>(i)], out.tokens, out.labels);
}

}  // namespace

BatchLoader::BatchLoader(const Dataset& data, const BatchLoaderOptions& opt)
    : m_data(&data), m_opt(opt) {
  if (opt.batchSize <= 0)
    throw DataError("batch size " + std::to_string(opt.batchSize) + " for " + data.name +
                    ": must be > 0");
  if (opt.augmentCrop < 0) throw DataError("data.augment_crop = " + std::to_string(opt.augmentCrop) + ": must be >= 0");
  if (opt.augmentCrop > 0 || opt.augmentFlip) {
    const Shape& s = data.sampleShape;
    if (s.size() != 3)
      throw DataError(data.name + ": augmentation (data.augment_crop, data.augment_flip) needs image samples "
                      "(channels, height, width)");
    if (opt.augmentCrop > s[1] || opt.augmentCrop > s[2])
      throw DataError("data.augment_crop = " + std::to_string(opt.augmentCrop) + ": larger than the " +
                      std::to_string(s[1]) + "x" + std::to_string(s[2]) + " samples of " + data.name +
                      " (at most their side)");
    // Rows kept on a device are gathered there, unaugmented: a loader that only hands out row
    // indices cannot augment, and must not pretend to.
    if (!opt.copyData)
      throw DataError(data.name + ": augmented batches must carry their data (the device cache cannot augment)");
  }
  if (data.isTokenData()) {
    // A device cache of row indices would need the windows gathered on the device; token
    // batches are small (batch * block int32s), so they always travel from the host.
    if (!opt.copyData)
      throw DataError(data.name + ": token batches must carry their data (no device cache for token windows)");
    checkTokenData(data);
  }
  reset(0);
}

std::int64_t BatchLoader::batchesPerEpoch() const {
  const std::int64_t n = m_data->count, b = m_opt.batchSize;
  return m_opt.dropLast ? n / b : (n + b - 1) / b;
}

Rng::State BatchLoader::epochRngState(std::int64_t epoch) const {
  return Rng(m_opt.seed, kEpochStreamBase + static_cast<std::uint64_t>(epoch)).getState();
}

void BatchLoader::beginEpoch(std::int64_t epoch, const Rng::State& rng) {
  m_epoch = epoch;
  m_position = 0;
  m_epochRng = rng;
  m_order.resize(static_cast<std::size_t>(m_data->count));
  for (std::size_t i = 0; i < m_order.size(); ++i) m_order[i] = static_cast<std::int64_t>(i);
  if (m_opt.shuffle) {
    // A fresh permutation of 0..n-1 per epoch, as torch's RandomSampler draws randperm(n).
    Rng r;
    r.setState(rng);
    r.shuffle(m_order);
  }
}

void BatchLoader::reset(std::int64_t epoch) { beginEpoch(epoch, epochRngState(epoch)); }

bool BatchLoader::next(Batch& out) {
  if (m_position >= batchesPerEpoch()) {
    reset(m_epoch + 1);
    return false;
  }
  const Dataset& d = *m_data;
  const std::int64_t begin = m_position * m_opt.batchSize;
  const std::int64_t n = std::min(m_opt.batchSize, d.count - begin);
  const auto fs = static_cast<std::size_t>(d.featureSize());
  const auto td = static_cast<std::size_t>(d.targetDim);
  const bool hasLabels = !d.labels.empty(), hasTargets = !d.targets.empty();

  out.size = n;
  out.xShape.assign(1, n);
  out.xShape.insert(out.xShape.end(), d.sampleShape.begin(), d.sampleShape.end());
  out.rows.assign(m_order.begin() + begin, m_order.begin() + begin + n);
  if (!m_opt.copyData) {
    out.x.clear();
    out.labels.clear();
    out.tokens.clear();
    out.targets.clear();
    ++m_position;
    return true;
  }
  if (d.isTokenData()) {
    fillTokens(d, m_order, begin, n, out);
    ++m_position;
    return true;
  }
  out.tokens.clear();
  out.x.resize(static_cast<std::size_t>(n) * fs);
  out.labels.resize(hasLabels ? static_cast<std::size_t>(n) : 0);
  out.targets.resize(hasTargets ? static_cast<std::size_t>(n) * td : 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto src = static_cast<std::size_t>(m_order[static_cast<std::size_t>(begin + i)]);
    const auto dst = static_cast<std::size_t>(i);
    std::memcpy(out.x.data() + dst * fs, d.features.data() + src * fs, fs * sizeof(float));
    if (hasLabels) out.labels[dst] = d.labels[src];
    if (hasTargets)
      std::memcpy(out.targets.data() + dst * td, d.targets.data() + src * td, td * sizeof(float));
  }
  if (m_opt.augmentCrop > 0 || m_opt.augmentFlip) {
    Rng rng = augmentationRng(m_opt.seed, m_epoch, m_position);
    augmentBatch(out.x.data(), n, d.sampleShape, {m_opt.augmentCrop, m_opt.augmentFlip}, rng, m_augmentScratch);
  }
  ++m_position;
  return true;
}

BatchLoaderState BatchLoader::state() const {
  return {m_epoch, m_position, m_epochRng, m_data->count, m_opt.batchSize};
}

std::optional<std::string> BatchLoader::problemWith(const BatchLoaderState& s) const {
  if (s.count != m_data->count || s.batchSize != m_opt.batchSize)
    return "batch loader state for " + std::to_string(s.count) + " samples in batches of " +
           std::to_string(s.batchSize) + " does not fit " + m_data->name + " (" +
           std::to_string(m_data->count) + " samples in batches of " + std::to_string(m_opt.batchSize) +
           ": other data?)";
  if (s.epoch < 0 || s.position < 0 || s.position > batchesPerEpoch())
    return "batch loader state: position " + std::to_string(s.position) + " of epoch " +
           std::to_string(s.epoch) + " is outside the " + std::to_string(batchesPerEpoch()) +
           " batches per epoch of " + m_data->name;
  if (m_opt.shuffle && (s.rng[0] | s.rng[1] | s.rng[2] | s.rng[3]) == 0)
    return "batch loader state for " + m_data->name + ": the random generator state is all zero";
  return std::nullopt;
}

void BatchLoader::restore(const BatchLoaderState& s) {
  if (auto problem = problemWith(s)) throw DataError(*problem);
  beginEpoch(s.epoch, s.rng);
  m_position = s.position;
}

}  // namespace amp
