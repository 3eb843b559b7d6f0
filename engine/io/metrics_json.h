// Step metrics as JSON: one object per step in metrics.jsonl, histograms in histograms.jsonl
// (they are large and recorded only every K steps).
#pragma once

#include <QJsonObject>
#include <QString>
#include <memory>
#include <vector>

#include "engine/core/checked_file.h"
#include "engine/train/step_metrics.h"

namespace amp {

QJsonObject stepMetricsToJson(const StepMetrics& m);
QJsonObject histogramToJson(std::int64_t step, const HistogramRecord& h);
// The rounding counts histogramToJson wrote ("flushed_to_zero", "rounded_to_inf"); -1 where a
// line has none (not measured, or written before they existed).
void roundingCountsFromJson(const QJsonObject& o, HistogramRecord& h);
QJsonObject memoryToJson(const MemorySnapshot& m, bool peak);
// Reads back what stepMetricsToJson wrote (no histograms).
StepMetrics stepMetricsFromJson(const QJsonObject& o);
// One line of metrics.jsonl (compact JSON and a newline), and every step of such a text.
QByteArray stepMetricsJsonLine(const StepMetrics& m);
std::vector<StepMetrics> stepMetricsFromJsonLines(const QByteArray& jsonl);

// Appends JSON lines, each written whole or not at all (AppendOnlyFile), so a killed run
// keeps every finished step and a full disk never leaves half a line. Throws OutputError.
class JsonLinesWriter {
 public:
  explicit JsonLinesWriter(const QString& path, bool append = false);
  ~JsonLinesWriter();
  void write(const QJsonObject& o);
  void sync();

 private:
  std::unique_ptr<AppendOnlyFile> m_file;
};

}  // namespace amp
