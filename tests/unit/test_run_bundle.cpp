// Run bundles: a real run folder (a tiny Trainer written by RunOutputWriter) bundled with charts
// and its checkpoint opens again through openAnything(); damaged bundles and bad chart names are
// one-line errors naming the file and the entry.
#include <gtest/gtest.h>

#include <QFile>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <functional>

#include "engine/config/config_schema.h"
#include "engine/io/checkpoint.h"
#include "engine/io/run_bundle.h"
#include "engine/io/run_output.h"
#include "engine/io/zip_entries.h"
#include "engine/train/event_text.h"
#include "test_support.h"

namespace amp {
namespace {

// Like `ampstudio-cli run --out DIR`: spirals MLP, 20 steps, histograms every 5, a forced
// overflow at step 9 (an event), a checkpoint at the end.
void writeTinyRun(const QString& dir) {
  RunConfig c;
  for (const char* kv : {"data.name=spirals", "data.samples=300", "model.name=mlp", "model.hidden=16",
                         "optimizer.name=sgd", "optimizer.lr=0.05", "train.batch_size=30", "train.steps=20",
                         "train.eval_every=10", "train.histogram_every=5", "amp.mode=fp16",
                         "train.inject_nonfinite=9", "seed=5"})
    applyOverride(c, kv);
  Trainer trainer(c);
  RunOutputWriter writer(dir, c);
  RunSummaryBuilder summary;
  QByteArray metrics;
  while (!trainer.finished()) {
    const StepMetrics m = trainer.step();
    writer.writeStep(m, describeEvents(m, c.scaler.growthInterval));
    summary.add(m);
    metrics += stepMetricsJsonLine(m);
  }
  RunSummary s = summary.summary();
  s.status = "finished";
  writer.writeSummary(s, QJsonObject{{"name", QString::fromStdString(c.displayName())}});
  saveCheckpoint(trainer, dir + "/checkpoints/" + checkpointFileName(trainer.stepsDone()), metrics);
}

QByteArray json(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact); }

void expectSameRecord(const RunRecord& a, const RunRecord& b) {
  EXPECT_EQ(flattenConfig(a.config), flattenConfig(b.config));
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.status, b.status);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i)
    EXPECT_EQ(json(stepMetricsToJson(a.steps[i])), json(stepMetricsToJson(b.steps[i])));
  ASSERT_EQ(a.histograms.size(), b.histograms.size());
  for (std::size_t i = 0; i < a.histograms.size(); ++i)
    EXPECT_EQ(json(histogramToJson(a.histograms[i].first, a.histograms[i].second)),
              json(histogramToJson(b.histograms[i].first, b.histograms[i].second)));
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.summary, b.summary);
}

const auto errorOf = test::messageOf<ExperimentError>;

QByteArray readAll(const QString& path) {
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
  return f.readAll();
}

class RunBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(m_tmp.isValid());
    writeTinyRun(path("run"));
    m_record = loadRunFolder(path("run"));
  }
  QString path(const QString& name) const { return m_tmp.filePath(name); }
  QTemporaryDir m_tmp;
  RunRecord m_record;
  const std::map<QString, QByteArray> m_charts = {
      {"loss.png", QByteArray("\x89PNG\r\n\x1a\n fake", 13)},
      {"scale.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>"},
      {"dashboard.pdf", "%PDF-1.4 fake"}};
};

TEST_F(RunBundleTest, BundleOpensAgainWithChartsAndCheckpoint) {
  ASSERT_FALSE(m_record.histograms.empty());
  ASSERT_FALSE(m_record.events.isEmpty());
  writeRunBundle(path("bundle.zip"), m_record, m_charts, {});
  const auto entries = readZipEntries(path("bundle.zip"));
  for (const char* name : {"config.json", "metrics.jsonl", "histograms.jsonl", "events.log", "summary.json",
                           "charts/loss.png", "charts/scale.svg", "charts/dashboard.pdf", "checkpoint.zip"})
    EXPECT_TRUE(entries.count(name)) << name;
  EXPECT_EQ(entries.at("charts/loss.png"), m_charts.at("loss.png"));
  EXPECT_EQ(entries.at("checkpoint.zip"), readAll(m_record.checkpointPath));

  const auto runs = openAnything(path("bundle.zip"));
  ASSERT_EQ(runs.size(), 1u);
  expectSameRecord(runs[0].record, m_record);
  EXPECT_EQ(runs[0].checkpointZip, readAll(m_record.checkpointPath));
  // The embedded checkpoint is a real one.
  QFile out(path("extracted.zip"));
  ASSERT_TRUE(out.open(QIODevice::WriteOnly));
  out.write(runs[0].checkpointZip);
  out.close();
  EXPECT_EQ(readCheckpointInfo(path("extracted.zip")).step, 20);

  // Bundling what was opened (bytes, no path) round-trips too.
  writeRunBundle(path("again.zip"), runs[0].record, {}, runs[0].checkpointZip);
  const auto again = openAnything(path("again.zip"));
  expectSameRecord(again[0].record, m_record);
  EXPECT_EQ(again[0].checkpointZip, runs[0].checkpointZip);
}

TEST_F(RunBundleTest, WithoutCheckpointThereIsNoCheckpointEntry) {
  RunRecord r = m_record;
  r.checkpointPath.clear();
  writeRunBundle(path("plain.zip"), r, {}, {});
  EXPECT_FALSE(readZipEntries(path("plain.zip")).count("checkpoint.zip"));
  const auto runs = openAnything(path("plain.zip"));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].checkpointZip.isEmpty());
  expectSameRecord(runs[0].record, r);
}

TEST_F(RunBundleTest, BadChartNamesAreRefusedAndNothingIsWritten) {
  for (const char* bad : {"../evil.png", "loss.gif", "sub/loss.png", ".png", "loss"}) {
    const std::string e = errorOf([&] { writeRunBundle(path("bad.zip"), m_record, {{bad, "x"}}, {}); });
    EXPECT_NE(e.find("must be a plain file name ending in .png, .svg or .pdf"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_FALSE(QFile::exists(path("bad.zip")));
  RunRecord r = m_record;
  r.checkpointPath = path("run/checkpoints/step-999.zip");
  EXPECT_NE(errorOf([&] { writeRunBundle(path("bad.zip"), r, {}, {}); }).find("step-999.zip: cannot read"),
            std::string::npos);
}

TEST_F(RunBundleTest, DamagedBundlesNameTheEntry) {
  writeRunBundle(path("bundle.zip"), m_record, m_charts, {});
  auto rewrite = [&](const QString& out, const std::function<void(std::map<QString, QByteArray>&)>& edit) {
    auto entries = readZipEntries(path("bundle.zip"));
    edit(entries);
    std::vector<ZipEntry> list;
    for (auto& [name, data] : entries) list.push_back({name, data});
    writeZipAtomically(out, list);
  };
  rewrite(path("nosummary.zip"), [](auto& e) { e.erase("summary.json"); });
  std::string e = errorOf([&] { openAnything(path("nosummary.zip")); });
  EXPECT_NE(e.find("nosummary.zip: summary.json: missing entry"), std::string::npos) << e;
  rewrite(path("badline.zip"), [](auto& e) {
    QList<QByteArray> lines = e["metrics.jsonl"].split('\n');
    lines[4] = "{\"step\": ";
    e["metrics.jsonl"] = lines.join('\n');
  });
  e = errorOf([&] { openAnything(path("badline.zip")); });
  EXPECT_NE(e.find("badline.zip: metrics.jsonl:5: not a JSON object"), std::string::npos) << e;
  rewrite(path("badhist.zip"), [](auto& e) {
    e["histograms.jsonl"] = QByteArray(e["histograms.jsonl"]).replace("\"kind\":\"", "\"kind\":\"weird_");
  });
  e = errorOf([&] { openAnything(path("badhist.zip")); });
  EXPECT_NE(e.find("histograms.jsonl:1: unknown histogram kind \"weird_"), std::string::npos) << e;

  // Cut anywhere, also right after checkpoint.zip (the last entry, stored): the file then ends
  // with the embedded checkpoint's own zip directory, which must not pass for the bundle's.
  const QByteArray bytes = readAll(path("bundle.zip"));
  const qsizetype eocd = bytes.lastIndexOf(QByteArray("PK\x05\x06", 4));
  ASSERT_EQ(eocd, bytes.size() - 22);
  const auto* d = reinterpret_cast<const unsigned char*>(bytes.constData()) + eocd + 16;
  const qsizetype directory = d[0] | d[1] << 8 | d[2] << 16 | d[3] << 24;
  for (const qsizetype keep : {bytes.size() - 1, bytes.size() - 22, bytes.size() - 40, directory, bytes.size() / 2}) {
    QFile cut(path("cut.zip"));
    ASSERT_TRUE(cut.open(QIODevice::WriteOnly));
    cut.write(bytes.left(keep));
    cut.close();
    e = errorOf([&] { openAnything(path("cut.zip")); });
    EXPECT_NE(e.find("cut.zip: not a zip archive, or a truncated one"), std::string::npos) << keep << ": " << e;
  }
}

}  // namespace
}  // namespace amp
