#include "engine/core/memory_tracker.h"

namespace amp {
namespace {
void raiseTo(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
}  // namespace

void MemoryTracker::onAlloc(MemCategory c, std::int64_t bytes) {
  const int i = static_cast<int>(c);
  raiseTo(m_peak[i], m_current[i].fetch_add(bytes, std::memory_order_relaxed) + bytes);
  raiseTo(m_totalPeak, m_total.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryTracker::onFree(MemCategory c, std::int64_t bytes) {
  m_current[static_cast<int>(c)].fetch_sub(bytes, std::memory_order_relaxed);
  m_total.fetch_sub(bytes, std::memory_order_relaxed);
}

MemorySnapshot MemoryTracker::snapshot() const {
  MemorySnapshot s;
  for (int i = 0; i < kMemCategoryCount; ++i) {
    s.current[i] = m_current[i].load(std::memory_order_relaxed);
    s.peak[i] = m_peak[i].load(std::memory_order_relaxed);
  }
  s.totalCurrent = m_total.load(std::memory_order_relaxed);
  s.totalPeak = m_totalPeak.load(std::memory_order_relaxed);
  return s;
}

void MemoryTracker::resetPeaks() {
  for (int i = 0; i < kMemCategoryCount; ++i) m_peak[i].store(m_current[i].load());
  m_totalPeak.store(m_total.load());
}

}  // namespace amp
