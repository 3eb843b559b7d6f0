// Metrics export: TensorBoard smoothing against hand-computed values, CSV parsed back (rows,
// columns, quoting, nan/inf, empty cells, exact numbers, also by Python's csv module) and JSON
// parsed back.
#include <gtest/gtest.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <bit>
#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "engine/io/metrics_export.h"
#include "engine/io/metrics_json.h"
#include "engine/telemetry/smoothing.h"

namespace amp {
namespace {

// Weight 0.6 on [1, 2, 3], by hand: ema = 0.4, 1.04, 1.824; debias 1 - 0.6^n = 0.4, 0.64, 0.784.
TEST(Smoothing, DebiasedEmaMatchesHandComputedValues) {
  const auto s = smoothTensorBoard({1, 2, 3}, 0.6);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 1.04 / 0.64);   // 1.625
  EXPECT_DOUBLE_EQ(s[2], 1.824 / 0.784);  // 2.3265306...
  EXPECT_NEAR(s[2], 2.326530612244898, 1e-15);
}

TEST(Smoothing, ZeroWeightIsTheIdentityAndNonFiniteValuesPassThrough) {
  const std::vector<double> y = {3.5, -1, 1e-30, 7};
  EXPECT_EQ(smoothTensorBoard(y, 0), y);
  EXPECT_EQ(smoothTensorBoard(y, NAN), y);
  // [1, nan, 3] weight 0.5: the nan is shown as is and not averaged in.
  const auto s = smoothTensorBoard({1, NAN, 3, INFINITY}, 0.5);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_DOUBLE_EQ(s[2], 1.75 / 0.75);
  EXPECT_EQ(s[3], INFINITY);
  // A weight of 1 is clamped to the slider's 0.999 rather than freezing the curve.
  EXPECT_EQ(smoothTensorBoard({1, 2}, 1.0), smoothTensorBoard({1, 2}, 0.999));
  EXPECT_TRUE(smoothTensorBoard({}, 0.6).empty());
}

StepMetrics step(std::int64_t n, double loss) {
  StepMetrics m;
  m.step = n;
  m.epoch = static_cast<int>(n / 3);
  m.loss = loss;
  m.scale = 65536;
  m.scaleAfter = 0.1f;
  m.growthTracker = static_cast<int>(n);
  m.gradNorm = 0.1 * double(n);
  m.lr = 1e-3;
  m.stepMs = 1.25;
  m.samplesPerS = 2048;
  m.lostUpdateFrac = 0.03125;
  m.memory.current[0] = 4096 * n;
  m.memory.peak[5] = 123456789012LL;
  m.memory.totalCurrent = 4096 * n;
  m.memory.totalPeak = 123456789012LL + 4096 * n;
  return m;
}

// Two runs: one with a name that needs quoting, a nan loss, an inf gradient norm, a skipped step
// and an evaluation on one step only.
std::vector<RunRecord> sampleRuns() {
  RunRecord a;
  a.name = "fp16, \"dynamic\" scale";
  a.status = "finished";
  a.steps = {step(1, 2.5), step(2, 1.0 / 3.0), step(3, NAN)};
  a.steps[1].gradNorm = INFINITY;
  a.steps[1].skipped = true;
  a.steps[2].testLoss = 0.75;
  a.steps[2].testAcc = 0.5;
  a.steps[2].memory.deviceTotal = 85899345920LL;  // a GPU run's device figures (80 GiB)
  a.steps[2].memory.deviceFree = 81604378624LL;
  a.summary = QJsonObject{{"status", "finished"}, {"steps", 3}};
  RunRecord b;
  b.name = "plain";
  b.status = "stopped";
  applyOverride(b.config, "amp.mode=bf16");
  b.steps = {step(1, 4), step(2, -INFINITY)};
  return {a, b};
}

// RFC 4180 reader: enough to check what metricsToCsv writes.
std::vector<std::vector<QString>> parseCsv(const QByteArray& text) {
  std::vector<std::vector<QString>> rows(1, std::vector<QString>(1));
  bool quoted = false;
  QByteArray field;
  for (qsizetype i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += text[++i];
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',' || c == '\n') {
      rows.back().back() = QString::fromUtf8(field);
      field.clear();
      if (c == ',') rows.back().emplace_back();
      else rows.emplace_back(1);
    } else {
      field += c;
    }
  }
  EXPECT_TRUE(field.isEmpty() && rows.back().size() == 1) << "the CSV must end with a newline";
  rows.pop_back();
  return rows;
}

TEST(MetricsExport, CsvHasOneRowPerRunPerStepAndReadsBack) {
  const auto runs = sampleRuns();
  const QByteArray csv = metricsToCsv({&runs[0], &runs[1]}, 0.6);
  const auto rows = parseCsv(csv);
  const QStringList cols = metricsExportColumns();
  ASSERT_EQ(cols.size(), 31);  // 15 scalars + 7 current + 7 peak memory + 2 device columns
  ASSERT_EQ(rows.size(), 1u + 3u + 2u);
  EXPECT_EQ(rows[0].front(), "run");
  for (const auto& r : rows) ASSERT_EQ(r.size(), static_cast<std::size_t>(cols.size() + 1));
  for (qsizetype c = 0; c < cols.size(); ++c) EXPECT_EQ(rows[0][c + 1], cols[c]);
  auto cell = [&](std::size_t row, const char* col) { return rows[row][cols.indexOf(col) + 1]; };

  EXPECT_EQ(rows[1][0], runs[0].name);  // quoted, quotes doubled, comma kept
  EXPECT_NE(csv.indexOf("\"fp16, \"\"dynamic\"\" scale\","), -1);
  EXPECT_EQ(rows[4][0], "plain");
  EXPECT_EQ(cell(1, "step"), "1");
  EXPECT_EQ(cell(3, "epoch"), "1");
  // Shortest exact text: reads back to the same bits.
  EXPECT_EQ(std::bit_cast<std::uint64_t>(cell(2, "loss").toDouble()), std::bit_cast<std::uint64_t>(1.0 / 3.0));
  EXPECT_EQ(cell(3, "loss"), "nan");
  EXPECT_EQ(cell(2, "grad_norm"), "inf");
  EXPECT_EQ(cell(5, "loss"), "-inf");
  EXPECT_EQ(cell(2, "skipped"), "1");
  EXPECT_EQ(cell(1, "skipped"), "0");
  EXPECT_EQ(cell(1, "scale"), "65536");
  EXPECT_EQ(cell(1, "scale_after"), "0.1");  // the float, not 0.10000000149011612
  EXPECT_EQ(cell(1, "test_loss"), "");
  EXPECT_EQ(cell(3, "test_loss"), "0.75");
  EXPECT_EQ(cell(3, "test_acc"), "0.5");
  EXPECT_EQ(cell(2, "mem_weights"), "8192");
  EXPECT_EQ(cell(1, "mem_peak_workspace"), "123456789012");
  EXPECT_EQ(cell(2, "mem_peak_total"), QString::number(123456789012LL + 8192));
  EXPECT_EQ(cell(3, "device_total"), "85899345920");
  EXPECT_EQ(cell(3, "device_free"), "81604378624");
  EXPECT_EQ(cell(2, "device_total"), "");  // unknown (a CPU step): empty, not 0
  const auto smooth = smoothTensorBoard({2.5, 1.0 / 3.0, NAN}, 0.6);
  EXPECT_DOUBLE_EQ(cell(1, "loss_smoothed").toDouble(), smooth[0]);
  EXPECT_DOUBLE_EQ(cell(2, "loss_smoothed").toDouble(), smooth[1]);
  EXPECT_EQ(cell(3, "loss_smoothed"), "nan");
  EXPECT_EQ(cell(4, "loss_smoothed"), "4");  // each run is smoothed on its own
  // Smoothing 0: loss_smoothed is the loss.
  const auto plain = parseCsv(metricsToCsv({&runs[0]}, 0));
  EXPECT_EQ(plain[2][cols.indexOf("loss_smoothed") + 1], plain[2][cols.indexOf("loss") + 1]);
  EXPECT_EQ(parseCsv(metricsToCsv({}, 0.6)).size(), 1u);  // the header alone
}

TEST(MetricsExport, PythonCsvModuleReadsTheSameTable) {
  const auto runs = sampleRuns();
  QTemporaryDir tmp;
  ASSERT_TRUE(tmp.isValid());
  QFile f(tmp.filePath("m.csv"));
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(metricsToCsv({&runs[0], &runs[1]}, 0.6));
  f.close();
  QProcess py;
  py.start(AMP_PYTHON, {"-c",
                        "import csv, sys\n"
                        "rows = list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8')))\n"
                        "print(len(rows), len({len(r) for r in rows}), len(rows[0]), rows[1][0], sep='|')\n",
                        f.fileName()});
  if (!py.waitForFinished(30000) || py.exitCode() != 0) GTEST_SKIP() << "python3 not usable here";
  EXPECT_EQ(QString::fromUtf8(py.readAllStandardOutput()).trimmed(), "6|1|32|fp16, \"dynamic\" scale");
}

TEST(MetricsExport, JsonHasNameConfigSummaryAndColumnArrays) {
  const auto runs = sampleRuns();
  const QJsonDocument doc = QJsonDocument::fromJson(metricsToJson({&runs[0], &runs[1]}, 0.6).toJson());
  ASSERT_TRUE(doc.isObject());
  const QJsonObject top = doc.object();
  EXPECT_EQ(top["format"].toString(), "ampstudio-metrics");
  EXPECT_EQ(top["version"].toInt(), 1);
  EXPECT_DOUBLE_EQ(top["smoothing"].toDouble(), 0.6);
  const QJsonArray list = top["runs"].toArray();
  ASSERT_EQ(list.size(), 2);
  const QJsonObject a = list[0].toObject(), b = list[1].toObject();
  EXPECT_EQ(a["name"].toString(), runs[0].name);
  EXPECT_EQ(b["status"].toString(), "stopped");
  EXPECT_EQ(a["summary"].toObject(), runs[0].summary);
  RunConfig back;
  applyConfigJson(back, b["config"].toObject());
  EXPECT_EQ(flattenConfig(back), flattenConfig(runs[1].config));
  const QJsonObject m = a["metrics"].toObject();
  EXPECT_EQ(m.keys().size(), metricsExportColumns().size());
  for (const QString& col : metricsExportColumns()) EXPECT_EQ(m[col].toArray().size(), 3) << col.toStdString();
  EXPECT_EQ(m["step"].toArray()[2].toInt(), 3);
  EXPECT_EQ(m["loss"].toArray()[2].toString(), "nan");
  EXPECT_EQ(m["grad_norm"].toArray()[1].toString(), "inf");
  EXPECT_TRUE(m["test_loss"].toArray()[0].isNull());
  EXPECT_DOUBLE_EQ(m["test_acc"].toArray()[2].toDouble(), 0.5);
  EXPECT_DOUBLE_EQ(m["loss_smoothed"].toArray()[1].toDouble(), smoothTensorBoard({2.5, 1.0 / 3.0}, 0.6)[1]);
  EXPECT_DOUBLE_EQ(m["mem_peak_workspace"].toArray()[0].toDouble(), 123456789012.0);
  EXPECT_EQ(b["metrics"].toObject()["loss"].toArray()[1].toString(), "-inf");
}

// metrics.jsonl keeps a GPU step's device figures (the memory chart of a reopened run shows them)
// and writes none for a CPU step.
TEST(MetricsExport, DeviceMemoryFiguresSurviveMetricsJsonl) {
  StepMetrics gpu = step(4, 0.5);
  gpu.memory.deviceTotal = 85899345920LL;
  gpu.memory.deviceFree = 1234567LL;
  const StepMetrics back = stepMetricsFromJson(stepMetricsToJson(gpu));
  EXPECT_EQ(back.memory.deviceTotal, 85899345920LL);
  EXPECT_EQ(back.memory.deviceFree, 1234567LL);
  EXPECT_EQ(back.memory.totalPeak, gpu.memory.totalPeak);
  const QJsonObject cpu = stepMetricsToJson(step(4, 0.5));
  EXPECT_FALSE(cpu["memory"].toObject().contains("device_total"));
  EXPECT_EQ(stepMetricsFromJson(cpu).memory.deviceTotal, 0);
}

}  // namespace
}  // namespace amp
