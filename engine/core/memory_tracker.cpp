#include "engine/core/memory_tracker.h"

#include <cstdio>

namespace amp {

std::string formatBytes(std::int64_t b) {
  char buf[32];
  if (b >= (std::int64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(1 << 30));
  else if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}
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
