#include "engine/io/tensorboard_export.h"

#include <QDateTime>
#include <QDir>
#include <QJsonDocument>
#include <algorithm>
#include <cmath>
#include <map>

#include "engine/core/checked_file.h"
#include "engine/io/config_json.h"
#include "engine/io/experiment_file.h"
#include "engine/io/metrics_json.h"
#include "engine/io/proto/tensorboard_event.pb.h"
#include "engine/io/tfevents_records.h"

namespace amp {

namespace {

std::string utf8(const QString& s) { return s.toStdString(); }

std::string compactJson(const QJsonObject& o) {
  return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

void scalar(tb::Summary& s, const std::string& tag, double v) {
  tb::Summary::Value* value = s.add_value();
  value->set_tag(tag);
  value->set_simple_value(static_cast<float>(v));
}

// A string as a scalar DT_STRING tensor; `plugin` "text" shows it in TensorBoard's Text tab,
// "ampstudio" keeps it out of TensorBoard's views (a plugin it does not know).
void text(tb::Summary& s, const std::string& tag, const std::string& str, const char* plugin) {
  tb::Summary::Value* value = s.add_value();
  value->set_tag(tag);
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
  tb::TensorProto* t = value->mutable_tensor();
  t->set_dtype(tb::DT_STRING);
  t->mutable_tensor_shape();  // rank 0
  t->add_string_val(str);
}

// A histogram over the binary exponent: bucket k counts the values with exponent -40 + k, i.e.
// [limit[k-1], limit[k]) = [e, e + 1) on a log2 axis, so TensorBoard draws the same bars as the
// app (zeros, infs and nans have no exponent: they are in the ampstudio/histogram line).
void exponentHistogram(tb::Summary& s, const std::string& tag, const ExponentHistogram& h) {
  tb::Summary::Value* value = s.add_value();
  value->set_tag(tag);
  tb::HistogramProto* p = value->mutable_histo();
  double num = 0, sum = 0, sumSq = 0, lo = 0, hi = 0;
  bool any = false;
  for (int k = 0; k < kHistExpBins; ++k) {
    const double e = kHistMinExp + k;
    p->add_bucket_limit(e + 1);
    p->add_bucket(static_cast<double>(h.counts[k]));
    if (h.counts[k] == 0) continue;
    const double n = static_cast<double>(h.counts[k]);
    num += n;
    sum += n * e;
    sumSq += n * e * e;
    if (!any) lo = e;
    hi = e + 1;
    any = true;
  }
  p->set_min(lo);
  p->set_max(hi);
  p->set_num(num);
  p->set_sum(sum);
  p->set_sum_squares(sumSq);
}

std::string serialized(const tb::Event& e) {
  std::string bytes;
  e.SerializeToString(&bytes);
  return bytes;
}

void stepScalars(tb::Summary& s, const StepMetrics& m) {
  scalar(s, "train/loss", m.loss);
  scalar(s, "train/grad_norm", m.gradNorm);
  scalar(s, "train/lr", m.lr);
  scalar(s, "amp/loss_scale", m.scale);
  scalar(s, "amp/loss_scale_after", m.scaleAfter);
  scalar(s, "amp/growth_tracker", m.growthTracker);
  scalar(s, "amp/skipped", m.skipped ? 1 : 0);
  scalar(s, "amp/lost_update_frac", m.lostUpdateFrac);
  scalar(s, "speed/step_ms", m.stepMs);
  scalar(s, "speed/samples_per_s", m.samplesPerS);
  if (m.gemmGflops > 0) scalar(s, "speed/gemm_gflops", m.gemmGflops);
  for (int i = 0; i < kMemCategoryCount; ++i) {
    const std::string name(memCategoryName(static_cast<MemCategory>(i)));
    scalar(s, "memory/" + name + "_bytes", static_cast<double>(m.memory.current[i]));
    scalar(s, "memory_peak/" + name + "_bytes", static_cast<double>(m.memory.peak[i]));
  }
  scalar(s, "memory/total_bytes", static_cast<double>(m.memory.totalCurrent));
  scalar(s, "memory_peak/total_bytes", static_cast<double>(m.memory.totalPeak));
  if (m.testLoss) scalar(s, "test/loss", *m.testLoss);
  if (m.testAcc) scalar(s, "test/accuracy", *m.testAcc);
}

}  // namespace

std::string tensorboardEventFile(const RunRecord& r, double startWallTime) {
  std::string out;
  tb::Event version;
  version.set_wall_time(startWallTime);
  version.set_file_version("brain.Event:2");
  tfevents::appendRecord(out, serialized(version));

  tb::Event config;
  config.set_wall_time(startWallTime);
  config.set_step(0);
  text(*config.mutable_summary(), tbtag::kConfig, QJsonDocument(configToJson(r.config)).toJson().toStdString(), "text");
  tfevents::appendRecord(out, serialized(config));

  // Histograms by step, each step's records in file order.
  std::multimap<std::int64_t, const HistogramRecord*> histograms;
  for (const auto& [step, h] : r.histograms) histograms.emplace(step, &h);

  double wall = startWallTime;
  std::int64_t lastStep = 0;
  for (const StepMetrics& m : r.steps) {
    if (std::isfinite(m.stepMs) && m.stepMs > 0) wall += m.stepMs / 1e3;
    tb::Event e;
    e.set_wall_time(wall);
    e.set_step(m.step);
    tb::Summary& s = *e.mutable_summary();
    stepScalars(s, m);
    text(s, tbtag::kMetrics, compactJson(stepMetricsToJson(m)), "ampstudio");
    const auto [first, last] = histograms.equal_range(m.step);
    for (auto it = first; it != last; ++it) {
      const HistogramRecord& h = *it->second;
      const std::string name = std::string(histogramKindName(h.kind)) + "/" + h.tensor;
      exponentHistogram(s, tbtag::kExponentsUnscaled + name, h.unscaled);
      exponentHistogram(s, tbtag::kExponentsScaled + name, h.scaled);
      text(s, tbtag::kHistogramPrefix + name, compactJson(histogramToJson(m.step, h)), "ampstudio");
    }
    tfevents::appendRecord(out, serialized(e));
    lastStep = m.step;
  }
  // Histograms of steps without a metrics line (a run killed between the two files' writes).
  for (const auto& [step, h] : histograms) {
    const std::int64_t at = step;  // (a structured binding cannot be captured before C++20's P1091 in clang 14)
    const bool hasLine = std::any_of(r.steps.begin(), r.steps.end(), [&](const StepMetrics& m) { return m.step == at; });
    if (hasLine) continue;
    tb::Event e;
    e.set_wall_time(wall);
    e.set_step(step);
    const std::string name = std::string(histogramKindName(h->kind)) + "/" + h->tensor;
    text(*e.mutable_summary(), tbtag::kHistogramPrefix + name, compactJson(histogramToJson(step, *h)), "ampstudio");
    tfevents::appendRecord(out, serialized(e));
  }

  tb::Event end;
  end.set_wall_time(wall);
  end.set_step(lastStep);
  QJsonObject summary = r.summary;
  summary["name"] = r.name;
  if (!r.status.isEmpty()) summary["status"] = r.status;
  text(*end.mutable_summary(), tbtag::kSummary, QJsonDocument(summary).toJson().toStdString(), "text");
  text(*end.mutable_summary(), tbtag::kEvents, utf8(r.events.join('\n')), "text");
  tfevents::appendRecord(out, serialized(end));
  return out;
}

std::vector<QString> writeTensorBoardFolder(const std::vector<const RunRecord*>& runs, const QString& dir) {
  if (runs.empty()) throw RunRecordError("TensorBoard export: no runs to export");
  std::vector<QString> folders;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const QString folder = QDir(dir).filePath(safeRunFolderName(static_cast<int>(i), runs[i]->name));
    const QStringList existing = QDir(folder).entryList({QStringLiteral("*tfevents*")}, QDir::Files);
    if (!existing.isEmpty())
      throw RunRecordError((folder + ": already holds TensorBoard event files (" + existing.first() +
                            "); TensorBoard would show both: choose an empty folder").toStdString());
    folders.push_back(folder);
  }
  const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1e3;
  std::vector<QString> written;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = *runs[i];
    double total = 0;
    for (const StepMetrics& m : r.steps)
      if (std::isfinite(m.stepMs) && m.stepMs > 0) total += m.stepMs / 1e3;
    makeFolders(folders[i].toStdString());
    const QString file = QDir(folders[i]).filePath(
        QStringLiteral("events.out.tfevents.%1.ampstudio").arg(static_cast<qint64>(now)));
    const std::string bytes = tensorboardEventFile(r, now - total);
    writeFileAtomically(file.toStdString(), bytes);
    written.push_back(file);
  }
  return written;
}

}  // namespace amp
