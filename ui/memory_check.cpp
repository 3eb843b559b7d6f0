#include "ui/memory_check.h"

#include <QCoreApplication>
#include <algorithm>

#include "engine/backend/backend_registry.h"
#include "engine/core/memory_tracker.h"
#include "engine/train/memory_estimate.h"

namespace amp::ui {

namespace {
bool trainsOnHost(const RunConfig& c) {
  return c.backend == "cpu" || (c.backend == "auto" && !gpuInventory().usable());
}
QString tr(const char* text) { return QCoreApplication::translate("amp::ui::MemoryCheck", text); }
}  // namespace

MemoryCheck checkHostMemory(const QVector<RunConfig>& configs, int maxConcurrent) {
  MemoryCheck out;
  const std::optional<std::int64_t> available = hostMemoryAvailable();
  if (!available) return out;
  std::vector<std::int64_t> needs;
  for (const RunConfig& c : configs) {
    if (!trainsOnHost(c)) continue;
    MemoryEstimate e;
    try {
      e = estimateMemory(c);
    } catch (const std::exception&) {
      continue;  // the run itself reports why its data or settings fail
    }
    // One run alone must fit: refuse it with its own figures, as the Trainer would.
    if (auto why = memoryRefusal(c, e, e.total(), *available, std::string()))
      return {QString::fromStdString(*why), {}};
    needs.push_back(e.total());
  }
  if (needs.empty()) return out;
  // Runs that train at once share the memory: the largest maxConcurrent of them together.
  std::sort(needs.rbegin(), needs.rend());
  std::int64_t together = 0;
  for (std::size_t i = 0; i < needs.size() && int(i) < std::max(1, maxConcurrent); ++i) together += needs[i];
  const QString avail = QString::fromStdString(formatBytes(*available));
  if (together > *available)
    return {tr("these runs need ≈ %1 together (%2 at once); %3 available: lower \"Max concurrent\" or the model size")
                .arg(QString::fromStdString(formatBytes(together)))
                .arg(std::min<int>(int(needs.size()), std::max(1, maxConcurrent)))
                .arg(avail),
            {}};
  out.summary = tr("needs ≈ %1 of %2 available").arg(QString::fromStdString(formatBytes(together)), avail);
  return out;
}

}  // namespace amp::ui
