// A run's output folder: config.json, metrics.jsonl, histograms.jsonl, events.log and
// summary.json. Lines are flushed as steps finish, so a killed run keeps what it did.
#pragma once

#include <QJsonObject>
#include <QString>
#include <memory>

#include "engine/config/run_config.h"
#include "engine/io/metrics_json.h"
#include "engine/train/run_summary.h"

class QFile;

namespace amp {

QJsonObject runSummaryToJson(const RunSummary& s);

class RunOutputWriter {
 public:
  // Creates `dir` (and parents). Throws std::runtime_error naming the folder if it cannot.
  RunOutputWriter(const QString& dir, const RunConfig& config, bool append = false);
  ~RunOutputWriter();
  void writeStep(const StepMetrics& m, const std::vector<std::string>& events);
  // summary.json: the summary plus `extra` keys (backend, model, ...). Written atomically.
  void writeSummary(const RunSummary& s, const QJsonObject& extra);
  void writeJson(const QString& name, const QJsonObject& o);  // atomically, into the folder
  const QString& dir() const { return m_dir; }

 private:
  QString m_dir;
  std::unique_ptr<JsonLinesWriter> m_metrics, m_histograms;
  std::unique_ptr<QFile> m_events;
};

}  // namespace amp
