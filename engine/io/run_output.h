// A run's output folder: config.json, metrics.jsonl, histograms.jsonl, events.log and
// summary.json. Lines are written whole as steps finish, so a killed run keeps what it did, and
// a write that fails (a full disk) throws OutputError naming the file and the system's reason
// with every line before it intact; summary.json appears only complete, and only last.
#pragma once

#include <QJsonObject>
#include <QString>
#include <memory>

#include "engine/config/run_config.h"
#include "engine/io/metrics_json.h"
#include "engine/train/run_summary.h"

namespace amp {

QJsonObject runSummaryToJson(const RunSummary& s);

class RunOutputWriter {
 public:
  // Creates `dir` (and parents). Throws OutputError naming the folder or file if it cannot.
  RunOutputWriter(const QString& dir, const RunConfig& config, bool append = false);
  ~RunOutputWriter();
  void writeStep(const StepMetrics& m, const std::vector<std::string>& events);
  // summary.json: the summary plus `extra` keys (backend, model, ...). Written atomically.
  void writeSummary(const RunSummary& s, const QJsonObject& extra);
  void writeJson(const QString& name, const QJsonObject& o);  // atomically, into the folder
  // Everything appended so far is on the disk (before a checkpoint refers to it, and at the end).
  void sync();
  const QString& dir() const { return m_dir; }

 private:
  QString m_dir;
  std::unique_ptr<JsonLinesWriter> m_metrics, m_histograms;
  std::unique_ptr<AppendOnlyFile> m_events;
};

}  // namespace amp
