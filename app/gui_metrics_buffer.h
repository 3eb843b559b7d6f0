// The hand-off between a training thread and the GUI thread: the worker pushes each step's
// metrics under a mutex and learns whether the buffer was empty, so it can emit one payload-free
// signal per batch instead of one per step; the GUI drains everything at its own pace (at most
// ~30 times a second). Also carries the latest per-op dtype trace, which is rare and large.
#pragma once

#include <mutex>
#include <optional>
#include <vector>

#include "engine/amp/op_trace.h"
#include "engine/train/step_metrics.h"

namespace amp::gui {

struct DrainedMetrics {
  std::vector<StepMetrics> steps;
  std::optional<std::vector<OpTraceEntry>> trace;  // set when a step was traced since last drain
  std::int64_t traceStep = 0;                       // the step it was recorded in
  bool empty() const { return steps.empty() && !trace; }
};

class MetricsBuffer {
 public:
  // Returns true when the buffer went from empty to non-empty: the caller signals only then.
  bool push(StepMetrics&& m);
  bool pushTrace(std::int64_t step, std::vector<OpTraceEntry> trace);
  DrainedMetrics drain();  // everything pushed so far, oldest first; leaves the buffer empty
  bool empty() const;

 private:
  mutable std::mutex m_mutex;
  DrainedMetrics m_pending;
};

}  // namespace amp::gui
