#include "engine/io/run_output.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <cmath>
#include <stdexcept>

#include "engine/core/checked_file.h"
#include "engine/io/config_json.h"
#include "engine/io/run_record.h"  // the run files' names

namespace amp {

QJsonObject runSummaryToJson(const RunSummary& s) {
  QJsonObject o;
  o["status"] = QString::fromStdString(s.status);
  o["steps"] = static_cast<double>(s.steps);
  o["final_loss"] = std::isfinite(s.finalLoss) ? QJsonValue(s.finalLoss) : QJsonValue("nan");
  if (s.finalTestLoss) o["final_test_loss"] = *s.finalTestLoss;
  if (s.finalTestAcc) o["final_test_acc"] = *s.finalTestAcc;
  o["skipped_steps"] = static_cast<double>(s.skippedSteps);
  QJsonArray at;
  for (auto k : s.skippedAt) at.append(static_cast<double>(k));
  o["skipped_at"] = at;
  o["final_scale"] = s.finalScale;
  o["median_step_ms"] = s.medianStepMs;
  o["median_samples_per_s"] = s.medianSamplesPerS;
  o["median_gemm_gflops"] = s.medianGemmGflops;
  QJsonArray ep;
  for (double e : s.epochSeconds) ep.append(e);
  o["epoch_seconds"] = ep;
  o["peak_memory"] = memoryToJson(s.peakMemory, true);
  o["mean_lost_update_frac"] = s.meanLostUpdateFrac;
  if (!s.divergence.empty()) o["divergence"] = QString::fromStdString(s.divergence);
  if (s.checkpointBytes > 0) o["checkpoint_bytes"] = static_cast<double>(s.checkpointBytes);
  if (s.weightsBytes > 0) {
    o["weights_bytes"] = static_cast<double>(s.weightsBytes);
    o["weights_dtype"] = QString::fromStdString(s.weightsDtype);
  }
  return o;
}

RunOutputWriter::RunOutputWriter(const QString& dir, const RunConfig& config, bool append)
    : m_dir(dir) {
  makeFolders(dir.toStdString());
  writeJson(kRunConfigFile, configToJson(config));
  m_metrics = std::make_unique<JsonLinesWriter>(dir + "/" + kRunMetricsFile, append);
  m_histograms = std::make_unique<JsonLinesWriter>(dir + "/" + kRunHistogramsFile, append);
  m_events = std::make_unique<AppendOnlyFile>((dir + "/" + kRunEventsFile).toStdString(), !append);
}

RunOutputWriter::~RunOutputWriter() = default;

void RunOutputWriter::writeStep(const StepMetrics& m, const std::vector<std::string>& events) {
  m_metrics->write(stepMetricsToJson(m));
  for (const auto& h : m.histograms) m_histograms->write(histogramToJson(m.step, h));
  std::string lines;
  for (const auto& e : events) lines += e + "\n";
  m_events->append(lines);
}

void RunOutputWriter::sync() {
  m_metrics->sync();
  m_histograms->sync();
  m_events->sync();
}

void RunOutputWriter::writeSummary(const RunSummary& s, const QJsonObject& extra) {
  QJsonObject o = runSummaryToJson(s);
  for (auto it = extra.begin(); it != extra.end(); ++it) o[it.key()] = it.value();
  // The lines it summarises reach the disk first: a summary must never claim steps that a
  // power cut could still take away.
  sync();
  writeJson(kRunSummaryFile, o);
}

void RunOutputWriter::writeJson(const QString& name, const QJsonObject& o) {
  writeFileAtomically((m_dir + "/" + name).toStdString(), QJsonDocument(o).toJson().toStdString());
}

}  // namespace amp
