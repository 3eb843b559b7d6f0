// Run folders and experiment files (.ampx): a real CLI-like folder (a tiny Trainer written by
// RunOutputWriter) reads back exactly, every format round-trips, and every kind of damage is an
// error naming the file and the entry (or the line), with nothing partially returned.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>

#include "engine/config/config_schema.h"
#include "engine/io/checkpoint.h"
#include "engine/io/experiment_file.h"
#include "engine/io/run_output.h"
#include "engine/io/zip_entries.h"
#include "engine/train/event_text.h"

namespace amp {
namespace {

// What the tiny run really produced, to compare the folder's reading against.
struct TinyRun {
  std::vector<StepMetrics> steps;
  std::vector<std::string> events;
};

// Like `ampstudio-cli run --out DIR`: spirals MLP, 20 steps, histograms every 5, an evaluation
// every 5, a forced overflow at step 7 (an event), a checkpoint at the end.
TinyRun writeTinyRun(const QString& dir, const std::string& name = "tiny, \"spirals\"") {
  RunConfig c;
  for (const char* kv : {"data.name=spirals", "data.samples=400", "model.name=mlp", "model.hidden=16,16",
                         "model.activation=tanh", "optimizer.name=adam", "optimizer.lr=0.01", "train.batch_size=50",
                         "train.steps=20", "train.eval_every=5", "train.histogram_every=5", "amp.mode=fp16",
                         "scaler.growth_interval=4", "train.inject_nonfinite=7", "seed=11"})
    applyOverride(c, kv);
  c.name = name;
  Trainer trainer(c);
  RunOutputWriter writer(dir, c);
  RunSummaryBuilder summary;
  TinyRun run;
  QByteArray metrics;
  while (!trainer.finished()) {
    StepMetrics m = trainer.step();
    const auto events = describeEvents(m, c.scaler.growthInterval);
    writer.writeStep(m, events);
    summary.add(m);
    metrics += stepMetricsJsonLine(m);
    run.events.insert(run.events.end(), events.begin(), events.end());
    run.steps.push_back(std::move(m));
  }
  RunSummary s = summary.summary();
  s.status = "finished";
  writer.writeSummary(s, QJsonObject{{"name", QString::fromStdString(c.displayName())}});
  saveCheckpoint(trainer, dir + "/checkpoints/" + checkpointFileName(trainer.stepsDone()), metrics);
  return run;
}

QByteArray json(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact); }

void expectSameHistogram(const ExponentHistogram& a, const ExponentHistogram& b) {
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.total, b.total);
  EXPECT_EQ(a.underflow, b.underflow);
  EXPECT_EQ(a.subnormal, b.subnormal);
  EXPECT_EQ(a.overflow, b.overflow);
  EXPECT_EQ(a.nonFinite, b.nonFinite);
}

void expectSameRecord(const RunRecord& a, const RunRecord& b) {
  EXPECT_EQ(flattenConfig(a.config), flattenConfig(b.config));
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.status, b.status);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i)
    EXPECT_EQ(json(stepMetricsToJson(a.steps[i])), json(stepMetricsToJson(b.steps[i]))) << "step " << i + 1;
  ASSERT_EQ(a.histograms.size(), b.histograms.size());
  for (std::size_t i = 0; i < a.histograms.size(); ++i) {
    EXPECT_EQ(a.histograms[i].first, b.histograms[i].first);
    EXPECT_EQ(a.histograms[i].second.tensor, b.histograms[i].second.tensor);
    EXPECT_EQ(a.histograms[i].second.kind, b.histograms[i].second.kind);
    EXPECT_EQ(a.histograms[i].second.dtype, b.histograms[i].second.dtype);
    expectSameHistogram(a.histograms[i].second.scaled, b.histograms[i].second.scaled);
    expectSameHistogram(a.histograms[i].second.unscaled, b.histograms[i].second.unscaled);
  }
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.summary, b.summary);
}

template <class Error, class F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
  return f.readAll();
}

void writeAll(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
  f.write(bytes);
}

// An .ampx's entries with `edit` applied, written to `out`.
template <class Edit>
void rewriteZip(const QString& in, const QString& out, Edit edit) {
  auto entries = readZipEntries(in);
  edit(entries);
  std::vector<ZipEntry> list;
  for (auto& [name, data] : entries) list.push_back({name, data});
  writeZipAtomically(out, list);
}

class ExperimentFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(m_tmp.isValid());
    m_run = writeTinyRun(path("run"));
  }
  QString path(const QString& name) const { return m_tmp.filePath(name); }
  QTemporaryDir m_tmp;
  TinyRun m_run;
};

TEST_F(ExperimentFileTest, CliFolderReadsBackWhatTheTrainerProduced) {
  const RunRecord r = loadRunFolder(path("run"));
  EXPECT_EQ(r.name, "tiny, \"spirals\"");
  EXPECT_EQ(r.status, "finished");
  EXPECT_TRUE(r.warnings.isEmpty()) << r.warnings.join("; ").toStdString();
  EXPECT_EQ(r.config.train.histogramEvery, 5);
  EXPECT_TRUE(r.checkpointPath.endsWith("checkpoints/step-20.zip")) << r.checkpointPath.toStdString();
  ASSERT_EQ(r.steps.size(), 20u);
  std::size_t histogramCount = 0;
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const StepMetrics& want = m_run.steps[i];
    EXPECT_EQ(json(stepMetricsToJson(r.steps[i])), json(stepMetricsToJson(want)));
    for (const auto& h : want.histograms) {
      ASSERT_LT(histogramCount, r.histograms.size());
      const auto& [step, got] = r.histograms[histogramCount++];
      EXPECT_EQ(step, want.step);
      EXPECT_EQ(got.tensor, h.tensor);
      EXPECT_EQ(got.kind, h.kind);
      EXPECT_EQ(got.dtype, h.dtype);
      expectSameHistogram(got.scaled, h.scaled);
      expectSameHistogram(got.unscaled, h.unscaled);
    }
  }
  EXPECT_EQ(histogramCount, r.histograms.size());
  EXPECT_GT(histogramCount, 4u);  // steps 5, 10, 15, 20, several tensors each
  ASSERT_FALSE(m_run.events.empty());  // the injected overflow at step 7
  ASSERT_EQ(r.events.size(), static_cast<qsizetype>(m_run.events.size()));
  for (std::size_t i = 0; i < m_run.events.size(); ++i) EXPECT_EQ(r.events[i].toStdString(), m_run.events[i]);
  EXPECT_EQ(r.summary["steps"].toInt(), 20);
}

TEST_F(ExperimentFileTest, FolderRoundTripKeepsEverythingAndCopiesTheCheckpoint) {
  const RunRecord a = loadRunFolder(path("run"));
  writeRunFolder(a, path("copy"));
  const RunRecord b = loadRunFolder(path("copy"));
  expectSameRecord(a, b);
  EXPECT_EQ(readAll(b.checkpointPath), readAll(a.checkpointPath));
  writeRunFolder(b, path("copy"));  // onto itself: the checkpoint stays
  EXPECT_EQ(readAll(b.checkpointPath), readAll(a.checkpointPath));
}

TEST_F(ExperimentFileTest, VariantFolderFollowsTheComparisonOrder) {
  RunRecord r = loadRunFolder(path("run"));
  for (const char* label : {"a_fp32", "b_fp16"}) {
    r.name = QString("preset/") + label;
    r.checkpointPath.clear();
    writeRunFolder(r, path("preset/") + label);
  }
  QDir().mkpath(path("preset/not_a_run"));
  const QJsonObject cmp{{"runs", QJsonArray{QJsonObject{{"label", "b_fp16"}}, QJsonObject{{"label", "a_fp32"}}}}};
  writeAll(path("preset/summary.json"), QJsonDocument(cmp).toJson());
  const auto runs = loadRunFolders(path("preset"));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "preset/b_fp16");
  EXPECT_EQ(runs[1].name, "preset/a_fp32");
  const auto opened = openAnything(path("preset"));
  ASSERT_EQ(opened.size(), 2u);
  EXPECT_EQ(opened[0].record.name, "preset/b_fp16");
  EXPECT_TRUE(opened[0].color.isEmpty());
  EXPECT_NE(errorOf<RunRecordError>([&] { loadRunFolders(path("preset/not_a_run")); }).find("no sub-folder is one"),
            std::string::npos);
}

TEST_F(ExperimentFileTest, ExperimentRoundTripWithColoursVisibilityAndCheckpoint) {
  const RunRecord folder = loadRunFolder(path("run"));
  RunRecord second = folder;
  second.name = "second / run";
  second.checkpointPath.clear();
  second.histograms.resize(3);
  second.events << "a note with ünïcödé";
  second.summary["name"] = second.name;  // what the saved summary.json will say
  const std::vector<ExperimentRun> runs = {{folder, "#1f77b4", true, {}}, {second, "#ff7f0e80", false, {}, true}};
  saveExperiment(path("x.ampx"), runs);
  const auto loaded = loadExperiment(path("x.ampx"));
  ASSERT_EQ(loaded.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    expectSameRecord(loaded[i].record, runs[i].record);
    EXPECT_EQ(loaded[i].color, runs[i].color);
    EXPECT_EQ(loaded[i].visible, runs[i].visible);
    EXPECT_EQ(loaded[i].archived, runs[i].archived);
    EXPECT_TRUE(loaded[i].record.checkpointPath.isEmpty());
  }
  EXPECT_EQ(loaded[0].checkpointZip, readAll(folder.checkpointPath));  // embedded from the path
  EXPECT_TRUE(loaded[1].checkpointZip.isEmpty());
  const auto entries = readZipEntries(path("x.ampx"));
  EXPECT_TRUE(entries.count("runs/0-tiny_spirals_/checkpoint.zip"));
  EXPECT_TRUE(entries.count("runs/1-second_run/metrics.jsonl"));
  const QJsonObject manifest = QJsonDocument::fromJson(entries.at("manifest.json")).object();
  EXPECT_EQ(manifest["format"].toString(), "ampstudio-experiment");
  EXPECT_EQ(manifest["version"].toInt(), 1);
  EXPECT_FALSE(manifest["created"].toString().isEmpty());
  EXPECT_FALSE(manifest["app_version"].toString().isEmpty());

  const auto again = openAnything(path("x.ampx"));
  ASSERT_EQ(again.size(), 2u);
  expectSameRecord(again[1].record, second);
  // Saving what was loaded (checkpoint bytes, no path) gives the same runs.
  saveExperiment(path("y.ampx"), loaded);
  const auto twice = loadExperiment(path("y.ampx"));
  expectSameRecord(twice[0].record, folder);
  EXPECT_EQ(twice[0].checkpointZip, loaded[0].checkpointZip);
  EXPECT_NE(errorOf<ExperimentError>([&] { saveExperiment(path("z.ampx"), {{folder, "blue", true, {}}}); })
                .find("is not \"#rrggbb\""),
            std::string::npos);
}

TEST_F(ExperimentFileTest, GroupTagsAndNoteRoundTripAndStayOutOfSummariesWithout) {
  const RunRecord folder = loadRunFolder(path("run"));
  RunRecord tagged = folder;
  tagged.checkpointPath.clear();
  tagged.group = "spirals twins #2";
  tagged.tags = QStringList{"demo", "keep, maybe"};
  tagged.note = "fp16 without scaling: \"flat\" loss\nsecond line";
  saveExperiment(path("g.ampx"), {{tagged, "", true, {}}, {folder, "", true, {}}});
  const auto loaded = loadExperiment(path("g.ampx"));
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].record.group, tagged.group);
  EXPECT_EQ(loaded[0].record.tags, tagged.tags);
  EXPECT_EQ(loaded[0].record.note, tagged.note);
  // A run without them writes none of the keys: older readers see the summary they expect.
  EXPECT_TRUE(loaded[1].record.group.isEmpty());
  EXPECT_TRUE(loaded[1].record.tags.isEmpty());
  EXPECT_TRUE(loaded[1].record.note.isEmpty());
  const auto entries = readZipEntries(path("g.ampx"));
  const QJsonObject plain = QJsonDocument::fromJson(entries.at("runs/1-tiny_spirals_/summary.json")).object();
  EXPECT_FALSE(plain.contains("group") || plain.contains("tags") || plain.contains("note"));
  // A run folder (and so a bundle) carries them too.
  writeRunFolder(tagged, path("tagged"));
  const RunRecord back = loadRunFolder(path("tagged"));
  EXPECT_EQ(back.group, tagged.group);
  EXPECT_EQ(back.tags, tagged.tags);
  EXPECT_EQ(back.note, tagged.note);
  // Tags that are not a list of strings are an error naming the file.
  rewriteZip(path("g.ampx"), path("bad.ampx"), [](auto& e) {
    QJsonObject s = QJsonDocument::fromJson(e["runs/0-tiny_spirals_/summary.json"]).object();
    s["tags"] = 3;
    e["runs/0-tiny_spirals_/summary.json"] = QJsonDocument(s).toJson();
  });
  EXPECT_NE(errorOf<ExperimentError>([&] { loadExperiment(path("bad.ampx")); }).find("runs/0-tiny_spirals_/summary.json"),
            std::string::npos);
}

TEST_F(ExperimentFileTest, TruncatedLastLineIsAWarningAndAMalformedLineAnError) {
  const QString metrics = path("run/metrics.jsonl");
  const QByteArray good = readAll(metrics);
  writeAll(metrics, good + "{\"step\": 21, \"lo");  // killed while writing step 21
  const RunRecord r = loadRunFolder(path("run"));
  EXPECT_EQ(r.steps.size(), 20u);
  ASSERT_EQ(r.warnings.size(), 1);
  EXPECT_TRUE(r.warnings[0].contains("metrics.jsonl:21: incomplete last line")) << r.warnings[0].toStdString();

  QList<QByteArray> lines = good.split('\n');
  lines[2] = "{\"step\": 3, oops}";
  writeAll(metrics, lines.join('\n'));
  const std::string e = errorOf<RunRecordError>([&] { loadRunFolder(path("run")); });
  EXPECT_NE(e.find("run/metrics.jsonl:3: not a JSON object"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  lines[2] = "{\"loss\": 1}";
  writeAll(metrics, lines.join('\n'));
  EXPECT_NE(errorOf<RunRecordError>([&] { loadRunFolder(path("run")); }).find("metrics.jsonl:3: \"step\""),
            std::string::npos);
  lines[2] = "{\"step\": 3, \"loss\": 1}";
  writeAll(path("run/histograms.jsonl"),
           "{\"step\": 5, \"tensor\": \"0.weight\", \"kind\": \"weight_grad\", \"dtype\": \"fp16\"}\n");
  writeAll(metrics, lines.join('\n'));
  EXPECT_NE(errorOf<RunRecordError>([&] { loadRunFolder(path("run")); }).find("histograms.jsonl:1: bins must span"),
            std::string::npos);
}

TEST_F(ExperimentFileTest, MissingMetricsOrBadConfigNameTheFile) {
  QFile::copy(path("run/config.json"), path("config.json"));
  QFile::remove(path("run/metrics.jsonl"));
  std::string e = errorOf<RunRecordError>([&] { loadRunFolder(path("run")); });
  EXPECT_NE(e.find("run/metrics.jsonl: missing"), std::string::npos) << e;
  writeAll(path("run/metrics.jsonl"), "");
  QJsonObject config = QJsonDocument::fromJson(readAll(path("config.json"))).object();
  QJsonObject train = config["train"].toObject();
  train["batch_size"] = 0;
  config["train"] = train;
  writeAll(path("run/config.json"), QJsonDocument(config).toJson());
  e = errorOf<RunRecordError>([&] { loadRunFolder(path("run")); });
  EXPECT_NE(e.find("run/config.json: train.batch_size must be > 0"), std::string::npos) << e;
  writeAll(path("run/config.json"), "{\"no_such_key\": 1}");
  e = errorOf<RunRecordError>([&] { loadRunFolder(path("run")); });
  EXPECT_NE(e.find("run/config.json: "), std::string::npos) << e;
  EXPECT_NE(e.find("no_such_key"), std::string::npos) << e;
}

TEST_F(ExperimentFileTest, DamagedExperimentsAreErrorsNamingTheEntry) {
  saveExperiment(path("x.ampx"), {{loadRunFolder(path("run")), "#123456", true, {}}});
  const QByteArray bytes = readAll(path("x.ampx"));
  auto fails = [&](const QString& file, const std::string& needle) {
    const std::string e = errorOf<ExperimentError>([&] { loadExperiment(file); });
    EXPECT_NE(e.find(needle), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(errorOf<ExperimentError>([&] { openAnything(file); }), "(no error)");
  };
  writeAll(path("truncated.ampx"), bytes.left(bytes.size() / 2));
  fails(path("truncated.ampx"), "not a zip archive");
  writeAll(path("text.ampx"), "just some text\n");
  fails(path("text.ampx"), "not a zip archive");
  QByteArray flipped = bytes;
  for (qsizetype i = bytes.size() / 3; i < bytes.size() / 3 + 64; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  writeAll(path("flipped.ampx"), flipped);
  fails(path("flipped.ampx"), "corrupted entry");
  fails(path("missing.ampx"), "no such file");

  rewriteZip(path("x.ampx"), path("nomanifest.ampx"), [](auto& e) { e.erase("manifest.json"); });
  fails(path("nomanifest.ampx"), "manifest.json: missing");
  auto setManifest = [&](const QString& out, auto change) {
    rewriteZip(path("x.ampx"), out, [&](auto& e) {
      QJsonObject m = QJsonDocument::fromJson(e["manifest.json"]).object();
      change(m);
      e["manifest.json"] = QJsonDocument(m).toJson();
    });
  };
  setManifest(path("v2.ampx"), [](QJsonObject& m) { m["version"] = 2; });
  fails(path("v2.ampx"), "manifest.json: version 2 is not supported");
  setManifest(path("format.ampx"), [](QJsonObject& m) { m["format"] = "zip"; });
  fails(path("format.ampx"), "\"format\" is not \"ampstudio-experiment\"");
  setManifest(path("escape.ampx"), [](QJsonObject& m) {
    QJsonArray runs = m["runs"].toArray();
    QJsonObject r = runs[0].toObject();
    r["folder"] = "runs/../../etc";
    runs[0] = r;
    m["runs"] = runs;
  });
  fails(path("escape.ampx"), "runs[0]: \"folder\"");
  rewriteZip(path("x.ampx"), path("nosummary.ampx"), [](auto& e) { e.erase("runs/0-tiny_spirals_/summary.json"); });
  fails(path("nosummary.ampx"), "nosummary.ampx: runs/0-tiny_spirals_/summary.json: missing entry");
  rewriteZip(path("x.ampx"), path("nockpt.ampx"), [](auto& e) { e.erase("runs/0-tiny_spirals_/checkpoint.zip"); });
  fails(path("nockpt.ampx"), "runs/0-tiny_spirals_/checkpoint.zip: missing entry");
  rewriteZip(path("x.ampx"), path("badline.ampx"), [](auto& e) {
    QList<QByteArray> lines = e["runs/0-tiny_spirals_/metrics.jsonl"].split('\n');
    lines[1] = "[1, 2]";
    e["runs/0-tiny_spirals_/metrics.jsonl"] = lines.join('\n');
  });
  fails(path("badline.ampx"), "badline.ampx: runs/0-tiny_spirals_/metrics.jsonl:2: not a JSON object");
}

TEST_F(ExperimentFileTest, OpenAnythingRefusesCheckpointsAndStrangers) {
  const QString ckpt = loadRunFolder(path("run")).checkpointPath;
  std::string e = errorOf<ExperimentError>([&] { openAnything(ckpt); });
  EXPECT_NE(e.find("a checkpoint, not an experiment"), std::string::npos) << e;
  writeZipAtomically(path("other.zip"), {{"readme.txt", "hello"}});
  e = errorOf<ExperimentError>([&] { openAnything(path("other.zip")); });
  EXPECT_NE(e.find("not an AMP Studio experiment (.ampx), run bundle or run folder"), std::string::npos) << e;
  e = errorOf<ExperimentError>([&] { openAnything(path("run/checkpoints")); });
  EXPECT_NE(e.find("not a run folder"), std::string::npos) << e;
}

TEST(SafeRunFolderName, IsPortableAndIndexed) {
  EXPECT_EQ(safeRunFolderName(0, "underflow/fp16 dynamic"), "0-underflow_fp16_dynamic");
  EXPECT_EQ(safeRunFolderName(3, "../.."), "3-_..");
  EXPECT_EQ(safeRunFolderName(2, ""), "2-run");
  EXPECT_EQ(safeRunFolderName(1, "..hidden"), "1-hidden");
  EXPECT_LE(safeRunFolderName(12, QString(200, 'x')).size(), 48);
}

}  // namespace
}  // namespace amp
