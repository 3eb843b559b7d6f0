#include "engine/io/metrics_json.h"

#include "engine/io/fp8_json.h"
#include "engine/io/json_numbers.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace amp {

namespace {
// JSON has no inf/nan: json_numbers.h writes them as strings so a reader sees what happened.
QJsonValue num(double v) { return jsonNumberOrText(v); }
double readNum(const QJsonValue& v) { return numberFromJson(v); }
// A JSON number as a 64-bit count. Casting a double beyond the range (1e300) or nan is
// undefined behaviour (found by fuzzing metrics.jsonl): clamp to the range, nan as 0.
std::int64_t toInt64(const QJsonValue& v) {
  const double d = v.toDouble();
  if (!(d == d)) return 0;
  if (d >= 9223372036854775807.0) return std::numeric_limits<std::int64_t>::max();
  if (d <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(d);
}
}  // namespace

QJsonObject memoryToJson(const MemorySnapshot& m, bool peak) {
  QJsonObject o;
  for (int i = 0; i < kMemCategoryCount; ++i)
    o[QString::fromUtf8(memCategoryName(static_cast<MemCategory>(i)).data())] =
        static_cast<double>(peak ? m.peak[i] : m.current[i]);
  o["total"] = static_cast<double>(peak ? m.totalPeak : m.totalCurrent);
  // The device's own figures belong to "now", not to a peak window.
  if (!peak && m.deviceTotal > 0) {
    o["device_total"] = static_cast<double>(m.deviceTotal);
    o["device_free"] = static_cast<double>(m.deviceFree);
  }
  return o;
}

QJsonObject stepMetricsToJson(const StepMetrics& m) {
  QJsonObject o;
  o["step"] = static_cast<double>(m.step);
  o["epoch"] = m.epoch;
  o["loss"] = num(m.loss);
  o["scale"] = num(m.scale);
  o["scale_after"] = num(m.scaleAfter);
  o["growth_tracker"] = m.growthTracker;
  o["skipped"] = m.skipped;
  if (!m.scaleEvent.empty()) o["scale_event"] = QString::fromStdString(m.scaleEvent);
  o["grad_norm"] = num(m.gradNorm);
  if (m.clipped) o["clipped"] = true;
  o["lr"] = num(m.lr);
  if (m.schedulerStepOnSkip) o["scheduler_stepped_on_skip"] = true;
  o["step_ms"] = m.stepMs;
  if (m.threads > 0) o["threads"] = m.threads;  // CPU steps: the OpenMP threads it ran on
  o["samples_per_s"] = m.samplesPerS;
  o["gemm_gflops"] = m.gemmGflops;
  o["memory"] = memoryToJson(m.memory, false);
  o["memory_peak"] = memoryToJson(m.memory, true);
  if (!m.firstNonFinite.empty()) o["first_nonfinite"] = QString::fromStdString(m.firstNonFinite);
  if (m.injected) o["injected"] = true;
  if (m.postUnscaleOverflow) o["post_unscale_overflow"] = true;
  o["lost_update_frac"] = m.lostUpdateFrac;
  if (m.testLoss) o["test_loss"] = num(*m.testLoss);
  if (m.testAcc) o["test_acc"] = *m.testAcc;
  if (m.diverged) {
    o["diverged"] = true;
    o["divergence"] = QString::fromStdString(m.divergence);
  }
  if (m.ranks > 1) {  // absent for one process: its lines stay as they always were
    o["ranks"] = m.ranks;
    o["allreduce_ms"] = m.allreduceMs;
    QJsonArray per;
    for (double r : m.rankSamplesPerS) per.append(r);
    o["rank_samples_per_s"] = per;
  }
  if (!m.fp8.empty()) o["fp8"] = fp8RecordsToJson(m.fp8);
  return o;
}

QByteArray stepMetricsJsonLine(const StepMetrics& m) {
  return QJsonDocument(stepMetricsToJson(m)).toJson(QJsonDocument::Compact) + '\n';
}

std::vector<StepMetrics> stepMetricsFromJsonLines(const QByteArray& jsonl) {
  std::vector<StepMetrics> steps;
  for (const QByteArray& line : jsonl.split('\n'))
    if (!line.trimmed().isEmpty()) steps.push_back(stepMetricsFromJson(QJsonDocument::fromJson(line).object()));
  return steps;
}

StepMetrics stepMetricsFromJson(const QJsonObject& o) {
  StepMetrics m;
  m.step = toInt64(o["step"]);
  m.epoch = o["epoch"].toInt();
  m.loss = readNum(o["loss"]);
  m.scale = static_cast<float>(readNum(o["scale"]));
  m.scaleAfter = static_cast<float>(readNum(o["scale_after"]));
  m.growthTracker = o["growth_tracker"].toInt();
  m.skipped = o["skipped"].toBool();
  m.scaleEvent = o["scale_event"].toString().toStdString();
  m.gradNorm = readNum(o["grad_norm"]);
  m.clipped = o["clipped"].toBool();
  m.lr = readNum(o["lr"]);
  m.schedulerStepOnSkip = o["scheduler_stepped_on_skip"].toBool();
  m.stepMs = o["step_ms"].toDouble();
  m.samplesPerS = o["samples_per_s"].toDouble();
  m.gemmGflops = o["gemm_gflops"].toDouble();
  const QJsonObject cur = o["memory"].toObject(), peak = o["memory_peak"].toObject();
  for (int i = 0; i < kMemCategoryCount; ++i) {
    const QString k = QString::fromUtf8(memCategoryName(static_cast<MemCategory>(i)).data());
    m.memory.current[i] = toInt64(cur[k]);
    m.memory.peak[i] = toInt64(peak[k]);
  }
  m.memory.totalCurrent = toInt64(cur["total"]);
  m.memory.totalPeak = toInt64(peak["total"]);
  m.memory.deviceTotal = toInt64(cur["device_total"]);
  m.memory.deviceFree = toInt64(cur["device_free"]);
  m.firstNonFinite = o["first_nonfinite"].toString().toStdString();
  m.injected = o["injected"].toBool();
  m.postUnscaleOverflow = o["post_unscale_overflow"].toBool();
  m.lostUpdateFrac = o["lost_update_frac"].toDouble();
  if (o.contains("test_loss")) m.testLoss = readNum(o["test_loss"]);
  if (o.contains("test_acc")) m.testAcc = o["test_acc"].toDouble();
  m.diverged = o["diverged"].toBool();
  m.divergence = o["divergence"].toString().toStdString();
  m.ranks = std::max(1, o["ranks"].toInt(1));
  m.allreduceMs = o["allreduce_ms"].toDouble();
  m.threads = o["threads"].toInt(0);
  for (const QJsonValue& v : o["rank_samples_per_s"].toArray()) m.rankSamplesPerS.push_back(v.toDouble());
  m.fp8 = fp8RecordsFromJson(o["fp8"].toArray());
  return m;
}

QJsonObject histogramToJson(std::int64_t step, const HistogramRecord& h) {
  auto counts = [](const ExponentHistogram& e) {
    QJsonArray a;
    for (auto c : e.counts) a.append(static_cast<double>(c));
    return a;
  };
  auto fractions = [](const ExponentHistogram& e) {
    QJsonObject f;
    f["underflow"] = e.fraction(e.underflow);
    f["subnormal"] = e.fraction(e.subnormal);
    f["overflow"] = e.fraction(e.overflow);
    f["nonfinite"] = e.fraction(e.nonFinite);
    return f;
  };
  QJsonObject o;
  o["step"] = static_cast<double>(step);
  o["tensor"] = QString::fromStdString(h.tensor);
  o["kind"] = QString::fromUtf8(histogramKindName(h.kind).data());
  o["dtype"] = QString::fromUtf8(dtypeName(h.dtype).data());
  o["min_exp"] = kHistMinExp;
  o["max_exp"] = kHistMaxExp;
  o["scaled"] = counts(h.scaled);
  o["unscaled"] = counts(h.unscaled);
  o["scaled_fractions"] = fractions(h.scaled);
  o["unscaled_fractions"] = fractions(h.unscaled);
  // Absent when not measured (a 32-bit tensor, or a file from before the counts existed).
  if (h.flushedToZero >= 0) o["flushed_to_zero"] = static_cast<double>(h.flushedToZero);
  if (h.roundedToInf >= 0) o["rounded_to_inf"] = static_cast<double>(h.roundedToInf);
  return o;
}

void roundingCountsFromJson(const QJsonObject& o, HistogramRecord& h) {
  h.flushedToZero = o.contains("flushed_to_zero")
                        ? toInt64(o["flushed_to_zero"]) : -1;
  h.roundedToInf = o.contains("rounded_to_inf")
                       ? toInt64(o["rounded_to_inf"]) : -1;
}

JsonLinesWriter::JsonLinesWriter(const QString& path, bool append)
    : m_file(std::make_unique<AppendOnlyFile>(path.toStdString(), !append)) {}

JsonLinesWriter::~JsonLinesWriter() = default;

void JsonLinesWriter::write(const QJsonObject& o) {
  m_file->append((QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n').toStdString());
}

void JsonLinesWriter::sync() { m_file->sync(); }

}  // namespace amp
