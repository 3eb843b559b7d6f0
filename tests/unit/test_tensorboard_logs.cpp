// Ordinary SummaryWriter logs imported as their writer meant them (issue 40): the loss scale
// logged after scaler.update(), logged every N steps, evaluations at steps without a training
// loss, add_text, add_hparams' sub-folder, a relative --run path, a folder holding a run of ours
// beside a TensorBoard log, a bf16 log whose scale is 1; and the export's exponent histograms
// counting zeros and non-finite values. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>
#include <set>

#include "engine/io/proto/tensorboard_event.pb.h"
#include "engine/io/run_output.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/tensorboard_import.h"
#include "engine/io/tfevents_records.h"
#include "kernels/common/exponent_bins.h"
#include "test_support.h"

namespace amp {
namespace {

using test::messageOf;

struct Log {
  std::vector<tb::Event> events;
  void scalar(std::int64_t step, const std::string& tag, float v, double wall = 0) {
    tb::Event e;
    e.set_step(step);
    e.set_wall_time(wall ? wall : 1000.0 + double(step));
    tb::Summary::Value* value = e.mutable_summary()->add_value();
    value->set_tag(tag);
    value->set_simple_value(v);
    events.push_back(e);
  }
  void text(std::int64_t step, const std::string& tag, const std::string& s) {
    tb::Event e;
    e.set_step(step);
    tb::Summary::Value* value = e.mutable_summary()->add_value();
    value->set_tag(tag);
    value->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
    value->mutable_tensor()->set_dtype(tb::DT_STRING);
    value->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(1);
    value->mutable_tensor()->add_string_val(s);
    events.push_back(e);
  }
  std::string bytes() const {
    std::string out;
    tb::Event v;
    v.set_file_version("brain.Event:2");
    std::string b;
    v.SerializeToString(&b);
    tfevents::appendRecord(out, b);
    for (const auto& e : events) {
      e.SerializeToString(&b);
      tfevents::appendRecord(out, b);
    }
    return out;
  }
  void write(const QString& folder) const {
    QDir().mkpath(folder);
    QFile f(folder + "/events.out.tfevents.1.host.1.0");
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    const std::string b = bytes();
    f.write(b.data(), qint64(b.size()));
  }
};

RunRecord import(const Log& log) {
  return tensorBoardRunFromFiles({{"events.out.tfevents.1.test", log.bytes()}}, "logs/run/", "run");
}

std::vector<std::int64_t> skippedSteps(const RunRecord& r) {
  std::vector<std::int64_t> out;
  for (const auto& m : r.steps)
    if (m.skipped) out.push_back(m.step);
  return out;
}

// GradScaler's scale over steps 1..8 with skips at 3 and 6 and growth after step 7
// (what scaler.get_scale() returns after scaler.update() of each step).
const float kAfter[] = {65536, 65536, 32768, 32768, 32768, 16384, 32768, 32768};

TEST(TensorBoardLogs, ScaleLoggedAfterUpdateLocatesEachSkip) {
  Log log;
  for (int s = 1; s <= 8; ++s) {
    log.scalar(s, "Loss/train", 1.0f / float(s));
    log.scalar(s, "scaler/scale", kAfter[s - 1]);
  }
  const RunRecord r = import(log);
  ASSERT_EQ(r.steps.size(), 8u);
  EXPECT_EQ(skippedSteps(r), (std::vector<std::int64_t>{3, 6}));  // today's code said {2, 5}
  EXPECT_EQ(r.steps[2].scale, 65536.f);  // before step 3: after step 2
  EXPECT_EQ(r.steps[2].scaleAfter, 32768.f);
  EXPECT_EQ(r.steps[6].scaleEvent, "growth");
  EXPECT_EQ(r.config.mode, PrecisionMode::AmpFp16);
}

TEST(TensorBoardLogs, ScaleLoggedEveryFewStepsMakesNoPhantomSkips) {
  Log log;
  for (int s = 1; s <= 8; ++s) {
    log.scalar(s, "loss", 1.0f / float(s));
    if (s % 4 == 0) log.scalar(s, "loss_scale", kAfter[s - 1]);  // 32768 after 4, 32768 after 8
  }
  log.scalar(12, "loss", 0.1f);
  log.scalar(12, "loss_scale", 8192);  // fell somewhere in 9..12: not locatable
  const RunRecord r = import(log);
  ASSERT_EQ(r.steps.size(), 9u);
  EXPECT_EQ(skippedSteps(r), std::vector<std::int64_t>{});
  // No jump to 1 between logged values: steps 1-3 take the first value logged, later ones carry.
  for (const auto& m : r.steps) EXPECT_GE(m.scale, 8192.f) << "step " << m.step;
  EXPECT_EQ(r.steps[4].scale, 32768.f);  // step 5: carried from after step 4
  EXPECT_EQ(r.steps[8].scaleAfter, 8192.f);
  EXPECT_TRUE(r.warnings.join('\n').contains("the loss scale fell 1 times between values logged steps apart"));
}

TEST(TensorBoardLogs, EvaluationsAtStepsWithoutATrainingLossMakeNoSteps) {
  Log log;
  for (int s = 1; s <= 4; ++s) log.scalar(s, "train_loss", 2.0f);
  log.scalar(1000, "val_loss", 0.75f);  // Lightning logs validation at its own step counter
  log.scalar(1000, "val_acc", 0.5f);
  log.scalar(0, "lr", 0.1f);            // before the first training step
  const RunRecord r = import(log);
  ASSERT_EQ(r.steps.size(), 4u);  // today's code: 6 steps, two with a loss of 0
  for (const auto& m : r.steps) EXPECT_EQ(m.loss, 2.0) << "step " << m.step;
  ASSERT_TRUE(r.steps[3].testLoss.has_value());
  EXPECT_EQ(*r.steps[3].testLoss, 0.75);
  EXPECT_EQ(*r.steps[3].testAcc, 0.5);
  EXPECT_FLOAT_EQ(r.steps[0].lr, 0.1f);
}

TEST(TensorBoardLogs, TextIsKeptAsTextAndAScaleOfOneIsNotFp16) {
  Log log;
  for (int s = 1; s <= 3; ++s) {
    log.scalar(s, "loss", 1.0f);
    log.scalar(s, "grad_scale", 1.0f);  // GradScaler(enabled=False) in a bf16 script
  }
  log.text(0, "notes/text_summary", "bf16 run, lr 0.1");
  const RunRecord r = import(log);
  EXPECT_EQ(r.config.mode, PrecisionMode::Fp32);  // today's code: fp16
  EXPECT_TRUE(r.warnings.join('\n').contains("the loss scale is 1 throughout"));
  EXPECT_FALSE(r.summary["imported_scalars"].toObject().contains("notes/text_summary"));
  const QJsonArray text = r.summary["imported_text"].toObject()["notes/text_summary"].toArray();
  ASSERT_EQ(text.size(), 1);
  EXPECT_EQ(text[0].toArray()[1].toString(), "bf16 run, lr 0.1");
  // What the log did not have, for the app to say "not logged" instead of drawing zeros.
  const QJsonArray notLogged = r.summary["source"].toObject()["not_logged"].toArray();
  EXPECT_TRUE(notLogged.contains("samples_per_s"));
  EXPECT_TRUE(notLogged.contains("memory"));
}

TEST(TensorBoardLogs, WhatWasNotLoggedIsNotExportedAsMeasuredZeros) {
  Log log;
  for (int s = 1; s <= 3; ++s) log.scalar(s, "loss", 1.0f);
  const RunRecord r = import(log);
  std::set<std::string> tags;
  const std::string file = tensorboardEventFile(r, 1.7e9);  // the records are views into it
  for (const auto& rec : tfevents::splitRecords(file, "f").records) {
    tb::Event e;
    ASSERT_TRUE(e.ParseFromArray(rec.data.data(), int(rec.data.size())));
    for (const auto& v : e.summary().value()) tags.insert(v.tag());
  }
  EXPECT_TRUE(tags.count("train/loss"));
  EXPECT_FALSE(tags.count("speed/samples_per_s"));  // today's code: 0 samples/s, as if measured
  EXPECT_FALSE(tags.count("memory_peak/total_bytes"));
  EXPECT_TRUE(tags.count("speed/step_ms"));  // derived from the wall times
}

TEST(TensorBoardLogs, AnHparamsSubFolderDoesNotRefuseItsRunAndPathsAreNotDoubled) {
  QTemporaryDir tmp;
  Log run, hparams;
  for (int s = 1; s <= 3; ++s) run.scalar(s, "Loss/train", 1.0f);
  hparams.scalar(0, "hparam/accuracy", 0.9f);
  run.write(tmp.path() + "/logs/exp");
  hparams.write(tmp.path() + "/logs/exp/1795822260.99");
  const QString cwd = QDir::currentPath();
  ASSERT_TRUE(QDir::setCurrent(tmp.path()));
  std::vector<RunRecord> runs;
  EXPECT_NO_THROW(runs = loadRunsOrTensorBoard("logs"));  // relative, as --run logs
  QDir::setCurrent(cwd);
  ASSERT_EQ(runs.size(), 1u);  // today's code refused the whole log
  EXPECT_EQ(runs[0].name, "exp");
  EXPECT_EQ(runs[0].summary["source"].toObject()["folder"].toString(), "logs/exp/");  // not logs/logs/exp/
  EXPECT_TRUE(runs[0].warnings.join('\n').contains("logs/exp/1795822260.99/: no training loss"));
  EXPECT_TRUE(runs[0].warnings.join('\n').contains("hparam/accuracy"));
  // A folder of such folders alone is still refused, naming it.
  QTemporaryDir only;
  hparams.write(only.path() + "/h");
  EXPECT_HAS(messageOf<RunRecordError>([&] { loadRunsOrTensorBoard(only.path()); }), "/h/: no training loss");
}

TEST(TensorBoardLogs, ARunOfOursBesideATensorBoardLogLoadsBoth) {
  QTemporaryDir tmp;
  RunConfig c;
  { RunOutputWriter(tmp.path() + "/cli-run", c); }
  Log log;
  for (int s = 1; s <= 3; ++s) log.scalar(s, "loss", 1.0f);
  log.write(tmp.path() + "/tb/exp");
  const auto runs = loadRunsOrTensorBoard(tmp.path());
  ASSERT_EQ(runs.size(), 2u);  // today's code: the CLI run alone, without a word
  EXPECT_EQ(runs[1].name, "tb/exp");
}

TEST(TensorBoardLogs, ExportedHistogramsCountZerosAndNonFiniteValues) {
  HistogramRecord h;
  h.tensor = "w";
  h.kind = HistogramKind::WeightGrad;
  h.unscaled.counts[kHistBinZero] = 30;
  h.unscaled.counts[-3 - kHistMinExp] = 5;
  h.unscaled.counts[kHistBinNan] = 2;
  h.unscaled.total = 37;
  h.scaled = h.unscaled;
  RunRecord r;
  r.name = "z";
  StepMetrics m;
  m.step = 1;
  r.steps.push_back(m);
  r.histograms.emplace_back(1, h);
  const std::string file = tensorboardEventFile(r, 1.7e9);  // the records are views into it
  const auto split = tfevents::splitRecords(file, "f");
  bool found = false;
  for (const auto& rec : split.records) {
    tb::Event e;
    ASSERT_TRUE(e.ParseFromArray(rec.data.data(), int(rec.data.size())));
    for (const auto& v : e.summary().value()) {
      if (v.tag() != "exponents_unscaled/weight_grad/w") continue;
      found = true;
      const tb::HistogramProto& p = v.histo();
      EXPECT_EQ(p.num(), 37);       // today's code: 5 (zeros, inf and nan left out)
      EXPECT_EQ(p.min(), -41);      // the zeros' bucket [-41, -40) first; today's: min -3 > limit -39
      EXPECT_EQ(p.max(), 19);       // [18, 19): inf and nan
      ASSERT_EQ(p.bucket_size(), 60);  // -41 .. 18, inner empty buckets kept
      EXPECT_EQ(p.bucket(0), 30);
      EXPECT_EQ(p.bucket_limit(0), -40);
      EXPECT_EQ(p.bucket(-3 - kHistMinExp + 1), 5);
      EXPECT_EQ(p.bucket(59), 2);
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace amp
