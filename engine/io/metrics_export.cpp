#include "engine/io/metrics_export.h"

#include <QJsonArray>
#include <QJsonObject>
#include <charconv>
#include <cmath>
#include <algorithm>
#include <functional>

#include "engine/io/config_json.h"
#include "engine/telemetry/smoothing.h"

namespace amp {

namespace {

// One value of the table: absent, an integer, or a real number (a float is printed as the
// float it is: "0.1", not the double "0.10000000149011612").
struct Cell {
  enum Kind { None, Int, Real, Float } kind = None;
  std::int64_t integer = 0;
  double real = 0;
};
Cell intCell(std::int64_t v) { return {Cell::Int, v, 0}; }
Cell realCell(double v) { return {Cell::Real, 0, v}; }
Cell floatCell(float v) { return {Cell::Float, 0, v}; }
Cell optionalCell(const std::optional<double>& v) { return v ? realCell(*v) : Cell{}; }

struct Column {
  QString name;
  std::function<Cell(const StepMetrics& m, double smoothedLoss)> value;
};

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = [] {
    std::vector<Column> c = {
        {"step", [](const StepMetrics& m, double) { return intCell(m.step); }},
        {"epoch", [](const StepMetrics& m, double) { return intCell(m.epoch); }},
        {"loss", [](const StepMetrics& m, double) { return realCell(m.loss); }},
        {"loss_smoothed", [](const StepMetrics&, double s) { return realCell(s); }},
        {"scale", [](const StepMetrics& m, double) { return floatCell(m.scale); }},
        {"scale_after", [](const StepMetrics& m, double) { return floatCell(m.scaleAfter); }},
        {"growth_tracker", [](const StepMetrics& m, double) { return intCell(m.growthTracker); }},
        {"skipped", [](const StepMetrics& m, double) { return intCell(m.skipped ? 1 : 0); }},
        {"grad_norm", [](const StepMetrics& m, double) { return realCell(m.gradNorm); }},
        {"lr", [](const StepMetrics& m, double) { return realCell(m.lr); }},
        {"step_ms", [](const StepMetrics& m, double) { return realCell(m.stepMs); }},
        {"samples_per_s", [](const StepMetrics& m, double) { return realCell(m.samplesPerS); }},
        {"test_loss", [](const StepMetrics& m, double) { return optionalCell(m.testLoss); }},
        {"test_acc", [](const StepMetrics& m, double) { return optionalCell(m.testAcc); }},
        {"lost_update_frac", [](const StepMetrics& m, double) { return realCell(m.lostUpdateFrac); }},
    };
    for (const bool peak : {false, true}) {
      const QString prefix = peak ? "mem_peak_" : "mem_";
      for (int i = 0; i < kMemCategoryCount; ++i) {
        const std::string_view cat = memCategoryName(static_cast<MemCategory>(i));
        c.push_back({prefix + QString::fromUtf8(cat.data(), static_cast<qsizetype>(cat.size())),
                     [i, peak](const StepMetrics& m, double) {
                       return intCell(peak ? m.memory.peak[i] : m.memory.current[i]);
                     }});
      }
      c.push_back({prefix + "total", [peak](const StepMetrics& m, double) {
                     return intCell(peak ? m.memory.totalPeak : m.memory.totalCurrent);
                   }});
    }
    // The GPU's own total and free bytes after the step; empty for CPU runs.
    c.push_back({"device_total", [](const StepMetrics& m, double) {
                   return m.memory.deviceTotal > 0 ? intCell(m.memory.deviceTotal) : Cell{};
                 }});
    c.push_back({"device_free", [](const StepMetrics& m, double) {
                   return m.memory.deviceTotal > 0 ? intCell(m.memory.deviceFree) : Cell{};
                 }});
    return c;
  }();
  return cols;
}

QByteArray nonFiniteText(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

// Shortest text that reads back to the same value (std::to_chars without a precision).
QByteArray cellText(const Cell& c) {
  if (c.kind == Cell::None) return {};
  if (c.kind == Cell::Int) return QByteArray::number(static_cast<qlonglong>(c.integer));
  if (!std::isfinite(c.real)) return nonFiniteText(c.real);
  char buf[64];
  const auto res = c.kind == Cell::Float ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(c.real))
                                         : std::to_chars(buf, buf + sizeof buf, c.real);
  return QByteArray(buf, static_cast<qsizetype>(res.ptr - buf));
}

QJsonValue cellJson(const Cell& c) {
  switch (c.kind) {
    case Cell::None: return QJsonValue::Null;
    case Cell::Int: return static_cast<double>(c.integer);
    default:
      // JSON has no inf/nan: strings, as metrics.jsonl writes them.
      if (!std::isfinite(c.real)) return QString::fromLatin1(nonFiniteText(c.real));
      return c.real;
  }
}

QByteArray csvField(const QString& s) {
  QByteArray b = s.toUtf8();
  if (!b.contains(',') && !b.contains('"') && !b.contains('\n') && !b.contains('\r')) return b;
  b.replace("\"", "\"\"");
  return '"' + b + '"';
}

// fp8 runs: per quantised tensor, five columns fp8_<tensor>_<figure> after the fixed ones, in
// the order the tensors first appear across the runs (a run without the tensor: empty cells).
const char* const kFp8Figures[] = {"amax", "scale", "underflow", "overflow", "sqnr_db"};

std::vector<Column> fp8Columns(const std::vector<const RunRecord*>& runs) {
  std::vector<std::string> tensors;
  for (const RunRecord* r : runs)
    for (const auto& m : r->steps)
      for (const auto& f : m.fp8)
        if (std::find(tensors.begin(), tensors.end(), f.tensor) == tensors.end()) tensors.push_back(f.tensor);
  std::vector<Column> c;
  for (const std::string& t : tensors)
    for (int fig = 0; fig < 5; ++fig)
      c.push_back({QString::fromStdString("fp8_" + t + "_" + kFp8Figures[fig]), [t, fig](const StepMetrics& m, double) {
                     for (const auto& f : m.fp8)
                       if (f.tensor == t) {
                         const double v[] = {f.amax, f.scale, f.underflow, f.overflow, f.sqnrDb};
                         return realCell(v[fig]);
                       }
                     return Cell{};
                   }});
  return c;
}

std::vector<Column> allColumns(const std::vector<const RunRecord*>& runs) {
  std::vector<Column> c = columns();
  for (Column& f : fp8Columns(runs)) c.push_back(std::move(f));
  return c;
}

std::vector<double> smoothedLoss(const RunRecord& r, double smoothing) {
  std::vector<double> loss;
  loss.reserve(r.steps.size());
  for (const auto& m : r.steps) loss.push_back(m.loss);
  return smoothTensorBoard(loss, smoothing);
}

}  // namespace

QStringList metricsExportColumns() {
  QStringList names;
  for (const auto& c : columns()) names << c.name;
  return names;
}

QByteArray metricsToCsv(const std::vector<const RunRecord*>& runs, double smoothing) {
  const auto cols = allColumns(runs);
  QByteArray out = "run";
  for (const auto& c : cols) out += ',' + c.name.toUtf8();
  out += '\n';
  for (const RunRecord* r : runs) {
    const QByteArray name = csvField(r->name);
    const std::vector<double> smooth = smoothedLoss(*r, smoothing);
    for (std::size_t i = 0; i < r->steps.size(); ++i) {
      out += name;
      for (const auto& c : cols) out += ',' + cellText(c.value(r->steps[i], smooth[i]));
      out += '\n';
    }
  }
  return out;
}

QJsonDocument metricsToJson(const std::vector<const RunRecord*>& runs, double smoothing) {
  const auto cols = allColumns(runs);
  QJsonArray list;
  for (const RunRecord* r : runs) {
    const std::vector<double> smooth = smoothedLoss(*r, smoothing);
    std::vector<QJsonArray> arrays(cols.size());
    for (std::size_t i = 0; i < r->steps.size(); ++i)
      for (std::size_t c = 0; c < cols.size(); ++c) arrays[c].append(cellJson(cols[c].value(r->steps[i], smooth[i])));
    QJsonObject metrics;
    for (std::size_t c = 0; c < cols.size(); ++c) metrics[cols[c].name] = arrays[c];
    list.append(QJsonObject{{"name", r->name},
                            {"status", r->status},
                            {"config", configToJson(r->config)},
                            {"summary", r->summary},
                            {"metrics", metrics}});
  }
  return QJsonDocument(QJsonObject{{"format", kMetricsExportFormat},
                                   {"version", kMetricsExportVersion},
                                   {"smoothing", smoothing},
                                   {"runs", list}});
}

}  // namespace amp
