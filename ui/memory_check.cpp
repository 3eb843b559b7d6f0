#include "ui/memory_check.h"

#include <QCoreApplication>
#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "engine/backend/backend_registry.h"
#include "engine/core/memory_tracker.h"
#include "engine/train/memory_estimate.h"

namespace amp::ui {

namespace {
bool trainsOnHost(const RunConfig& c) { return resolveBackendName(c.backend) == "cpu"; }
// Everything the loader reads from its options, as one string.
std::string dataKey(const DataOptions& d) {
  return d.name + '\n' + d.path + '\n' + d.testPath + '\n' + d.normalize + '\n' + d.labelColumn + '\n' +
         std::to_string(d.imageSize) + ' ' + std::to_string(d.channels) + ' ' + std::to_string(d.padTo) + ' ' +
         std::to_string(d.subset) + ' ' + std::to_string(d.testSubset) + ' ' + std::to_string(d.seed) + ' ' + std::to_string(d.testFraction) + ' ' +
         std::to_string(d.samples) + ' ' + std::to_string(d.noise) + ' ' + std::to_string(d.classes) + ' ' +
         std::to_string(d.batches) + ' ' + std::to_string(d.batchSize) + ' ' + std::to_string(d.width) + ' ' +
         std::to_string(d.targetWidth);
}
QString tr(const char* text) { return QCoreApplication::translate("amp::ui::MemoryCheck", text); }
}  // namespace

MemoryCheck checkHostMemory(const QVector<RunConfig>& configs, int maxConcurrent) {
  MemoryCheck out;
  const std::optional<std::int64_t> available = hostMemoryAvailable();
  if (!available) return out;
  std::vector<std::int64_t> needs;
  // A lesson's variants share one data set: load it once (Fashion-MNIST is ~190 MB, on the GUI
  // thread), keyed by what the loader sees.
  std::map<std::string, std::optional<DataShapes>> shapes;
  for (const RunConfig& c : configs) {
    if (!trainsOnHost(c)) continue;
    const std::string key = dataKey(dataOptionsOf(c));
    auto it = shapes.find(key);
    if (it == shapes.end()) {
      std::optional<DataShapes> s;
      try {
        s = dataShapesOf(c);
      } catch (const std::exception&) {
        // the run itself reports why its data fails
      }
      it = shapes.emplace(key, s).first;
    }
    if (!it->second) continue;
    DataShapes s = *it->second;
    s.emulatedCompute = emulatesCompute(c);
    MemoryEstimate e;
    try {
      e = estimateMemory(c, s);
    } catch (const std::exception&) {
      continue;  // the run itself reports why its settings fail
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
