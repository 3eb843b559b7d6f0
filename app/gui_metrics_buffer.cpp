#include "app/gui_metrics_buffer.h"

namespace amp::gui {

bool MetricsBuffer::push(StepMetrics&& m) {
  std::lock_guard lock(m_mutex);
  const bool wasEmpty = m_pending.empty();
  m_pending.steps.push_back(std::move(m));
  return wasEmpty;
}

bool MetricsBuffer::pushTrace(std::int64_t step, std::vector<OpTraceEntry> trace) {
  std::lock_guard lock(m_mutex);
  const bool wasEmpty = m_pending.empty();
  m_pending.trace = std::move(trace);
  m_pending.traceStep = step;
  return wasEmpty;
}

DrainedMetrics MetricsBuffer::drain() {
  DrainedMetrics out;
  {
    std::lock_guard lock(m_mutex);
    std::swap(out, m_pending);
  }
  return out;
}

bool MetricsBuffer::empty() const {
  std::lock_guard lock(m_mutex);
  return m_pending.empty();
}

}  // namespace amp::gui
