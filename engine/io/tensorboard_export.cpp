#include "engine/io/tensorboard_export.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>
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

// A histogram over the binary exponent, on a log2 axis: the bucket [e, e + 1) counts the values
// with exponent e (-40..17, as the app's bars), [-41, -40) the zeros and [18, 19) the infinities
// and NaNs, so that TensorBoard shows them too and `num` is every value. Empty buckets at both
// ends are left out and min/max are the outer edges of the rest: TensorBoard's loaders take min
// as the left edge of the first bucket (the Python one after dropping empty end buckets, the
// fast one without), so a leading empty bucket made the first bucket run backwards.
void exponentHistogram(tb::Summary& s, const std::string& tag, const ExponentHistogram& h) {
  struct B {
    double left, count;
  };
  std::vector<B> all;
  all.push_back({kTbZeroBucketLeft, static_cast<double>(h.counts[kHistBinZero])});
  for (int k = 0; k < kHistExpBins; ++k) all.push_back({double(kHistMinExp + k), static_cast<double>(h.counts[k])});
  all.push_back({kTbNonFiniteBucketLeft, static_cast<double>(h.counts[kHistBinInf] + h.counts[kHistBinNan])});
  std::size_t first = 0, last = all.size();
  while (first < last && all[first].count == 0) ++first;
  while (last > first && all[last - 1].count == 0) --last;
  tb::Summary::Value* value = s.add_value();
  value->set_tag(tag);
  tb::HistogramProto* p = value->mutable_histo();
  double num = 0, sum = 0, sumSq = 0;
  for (std::size_t i = first; i < last; ++i) {
    p->add_bucket_limit(all[i].left + 1);
    p->add_bucket(all[i].count);
    num += all[i].count;
    sum += all[i].count * all[i].left;
    sumSq += all[i].count * all[i].left * all[i].left;
  }
  p->set_min(first < last ? all[first].left : 0);
  p->set_max(first < last ? all[last - 1].left + 1 : 0);
  p->set_num(num);
  p->set_sum(sum);
  p->set_sum_squares(sumSq);
}

std::string serialized(const tb::Event& e) {
  std::string bytes;
  e.SerializeToString(&bytes);
  return bytes;
}

// What a run recorded elsewhere did not log (summary.json's source.not_logged): left out of the
// export rather than written as measured zeros.
struct NotLogged {
  bool samples = false, stepMs = false, memory = false;
  explicit NotLogged(const QJsonObject& summary) {
    const QJsonArray a = summary.value("source").toObject().value("not_logged").toArray();
    samples = a.contains(QStringLiteral("samples_per_s"));
    stepMs = a.contains(QStringLiteral("step_ms"));
    memory = a.contains(QStringLiteral("memory"));
  }
};

void stepScalars(tb::Summary& s, const StepMetrics& m, const NotLogged& missing) {
  scalar(s, "train/loss", m.loss);
  scalar(s, "train/grad_norm", m.gradNorm);
  scalar(s, "train/lr", m.lr);
  scalar(s, "amp/loss_scale", m.scale);
  scalar(s, "amp/loss_scale_after", m.scaleAfter);
  scalar(s, "amp/growth_tracker", m.growthTracker);
  scalar(s, "amp/skipped", m.skipped ? 1 : 0);
  scalar(s, "amp/lost_update_frac", m.lostUpdateFrac);
  if (!missing.stepMs) scalar(s, "speed/step_ms", m.stepMs);
  if (!missing.samples) scalar(s, "speed/samples_per_s", m.samplesPerS);
  if (m.gemmGflops > 0) scalar(s, "speed/gemm_gflops", m.gemmGflops);
  for (int i = 0; i < kMemCategoryCount && !missing.memory; ++i) {
    const std::string name(memCategoryName(static_cast<MemCategory>(i)));
    scalar(s, "memory/" + name + "_bytes", static_cast<double>(m.memory.current[i]));
    scalar(s, "memory_peak/" + name + "_bytes", static_cast<double>(m.memory.peak[i]));
  }
  if (!missing.memory) {
    scalar(s, "memory/total_bytes", static_cast<double>(m.memory.totalCurrent));
    scalar(s, "memory_peak/total_bytes", static_cast<double>(m.memory.totalPeak));
  }
  if (m.testLoss) scalar(s, "test/loss", *m.testLoss);
  if (m.testAcc) scalar(s, "test/accuracy", *m.testAcc);
  // fp8 runs: each quantised tensor's figures, one tag group per figure so TensorBoard overlays
  // the layers ("fp8_underflow/fc2.x"). An exact quantisation's SQNR (+inf) is left out.
  for (const Fp8TensorRecord& f : m.fp8) {
    scalar(s, "fp8_amax/" + f.tensor, f.amax);
    scalar(s, "fp8_scale/" + f.tensor, f.scale);
    scalar(s, "fp8_underflow/" + f.tensor, f.underflow);
    scalar(s, "fp8_overflow/" + f.tensor, f.overflow);
    if (std::isfinite(f.sqnrDb)) scalar(s, "fp8_sqnr_db/" + f.tensor, f.sqnrDb);
  }
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
  const NotLogged missing(r.summary);
  for (const StepMetrics& m : r.steps) {
    if (std::isfinite(m.stepMs) && m.stepMs > 0) wall += m.stepMs / 1e3;
    tb::Event e;
    e.set_wall_time(wall);
    e.set_step(m.step);
    tb::Summary& s = *e.mutable_summary();
    stepScalars(s, m, missing);
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
