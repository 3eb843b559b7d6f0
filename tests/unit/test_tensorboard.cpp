// TensorBoard event files: the TFRecord framing against CRC-32C's published check values and
// records assembled byte by byte from the protobuf wire format (independent of our writer and of
// protoc's code), the export read back exactly, logs of other programs' tags (PyTorch's
// SummaryWriter, Lightning) imported as runs with what they do not chart listed and kept, and
// every kind of damage refused in one line naming the file and the record.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <algorithm>
#include <cstring>

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "engine/io/experiment_file.h"
#include "engine/io/proto/tensorboard_event.pb.h"
#include "engine/io/run_output.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/tensorboard_import.h"
#include "engine/io/tfevents_records.h"
#include "engine/train/event_text.h"
#include "engine/train/run_summary.h"
#include "engine/train/trainer.h"
#include "test_support.h"

namespace amp {
namespace {

using test::messageOf;

// ---- protobuf wire format, by hand (https://protobuf.dev/programming-guides/encoding/) ----
std::string varint(std::uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string key(int field, int wireType) { return varint(std::uint64_t(field) << 3 | unsigned(wireType)); }
std::string lengthDelimited(int field, const std::string& body) { return key(field, 2) + varint(body.size()) + body; }
std::string fixed64(int field, double d) {
  std::string s = key(field, 1);
  char b[8];
  std::memcpy(b, &d, 8);
  return s + std::string(b, 8);
}
std::string fixed32(int field, float f) {
  std::string s = key(field, 5);
  char b[4];
  std::memcpy(b, &f, 4);
  return s + std::string(b, 4);
}
// Event{wall_time, step, summary{value{tag, simple_value}}}: Event fields 1, 2, 5; Summary 1;
// Value: tag 1, simple_value 2.
std::string scalarEvent(double wall, std::int64_t step, const std::string& tag, float v) {
  const std::string value = lengthDelimited(1, tag) + fixed32(2, v);
  return fixed64(1, wall) + key(2, 0) + varint(std::uint64_t(step)) + lengthDelimited(5, lengthDelimited(1, value));
}
std::string versionEvent(const std::string& version) { return fixed64(1, 1.0) + lengthDelimited(3, version); }

std::string framed(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) tfevents::appendRecord(out, r);
  return out;
}

RunRecord importOne(const std::string& bytes, const QString& name = "run") {
  return tensorBoardRunFromFiles({{"events.out.tfevents.1.test", bytes}}, "logs/" + name + "/", name);
}

// ---- the framing ----

TEST(TfEventsRecords, Crc32cMatchesItsPublishedCheckValues) {
  EXPECT_EQ(tfevents::crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(tfevents::crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720, B.4
  EXPECT_EQ(tfevents::crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(tfevents::crc32c(""), 0u);
  // TFRecord's mask: rotate right by 15, add 0xa282ead8.
  EXPECT_EQ(tfevents::maskedCrc(0), 0xA282EAD8u);
  EXPECT_EQ(tfevents::maskedCrc(0x00008000u), 0xA282EAD9u);
}

TEST(TfEventsRecords, ARecordIsLengthCrcDataCrc) {
  std::string out;
  tfevents::appendRecord(out, "abc");
  ASSERT_EQ(out.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(out.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(out.substr(12, 3), "abc");
  auto le32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, out.data() + at, 4);
    return v;
  };
  EXPECT_EQ(le32(8), tfevents::maskedCrc(tfevents::crc32c(out.substr(0, 8))));
  EXPECT_EQ(le32(15), tfevents::maskedCrc(tfevents::crc32c("abc")));
  const std::string two = out + out;  // the records' views point into it: it must outlive them
  const auto split = tfevents::splitRecords(two, "f");
  ASSERT_EQ(split.records.size(), 2u);
  EXPECT_EQ(split.records[1].data, "abc");
  EXPECT_EQ(split.records[1].offset, 19);
  EXPECT_TRUE(split.truncatedTail.empty());
}

TEST(TfEventsRecords, DamageIsOneLineNamingFileAndRecord) {
  const std::string good = framed({"first", "second"});
  std::string badData = good;
  badData[21 + 12 + 1] ^= 1;  // a bit of "second" (record 2 starts at 21, its data 12 later)
  EXPECT_HAS(messageOf<tfevents::RecordError>([&] { tfevents::splitRecords(badData, "x.tfevents"); }),
             "x.tfevents: record 2 (offset 21): data CRC mismatch");
  std::string badLength = good;
  badLength[0] ^= 4;
  EXPECT_HAS(messageOf<tfevents::RecordError>([&] { tfevents::splitRecords(badLength, "x.tfevents"); }),
             "record 1 (offset 0): length CRC mismatch");
  // A huge length with a correct CRC: refused before anything is allocated for it.
  std::string huge;
  std::string len(8, '\0');
  len[5] = 1;  // 2^40
  huge = len;
  const std::uint32_t crc = tfevents::maskedCrc(tfevents::crc32c(len));
  huge.append(reinterpret_cast<const char*>(&crc), 4);
  const std::string hugeAndMore = huge + "xx";
  EXPECT_HAS(messageOf<tfevents::RecordError>([&] { tfevents::splitRecords(hugeAndMore, "x.tfevents"); }),
             "record 1 (offset 0): length 1099511627776 bytes is over the 256 MiB");
  // Cut short: the whole records before it are kept, and the tail is named.
  const std::string cutBytes = good.substr(0, good.size() - 3);
  const auto cut = tfevents::splitRecords(cutBytes, "x.tfevents");
  ASSERT_EQ(cut.records.size(), 1u);
  EXPECT_HAS(cut.truncatedTail, "x.tfevents: record 2 (offset 21): cut short");
  const std::string cutHeaderBytes = good.substr(0, 25);
  const auto cutHeader = tfevents::splitRecords(cutHeaderBytes, "x.tfevents");
  EXPECT_HAS(cutHeader.truncatedTail, "record 2 (offset 21): cut short (4 bytes of its 12-byte header)");
}

// ---- import: hand-made records ----

TEST(TensorBoardImport, HandMadeEventsGiveTheirScalars) {
  const std::string bytes = framed({versionEvent("brain.Event:2"), scalarEvent(100.0, 1, "Loss/train", 0.5f),
                                    scalarEvent(100.25, 2, "Loss/train", 0.25f), scalarEvent(100.75, 4, "Loss/train", 0.125f)});
  const RunRecord r = importOne(bytes);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].step, 1);
  EXPECT_EQ(r.steps[2].step, 4);
  EXPECT_EQ(r.steps[1].loss, 0.25);
  EXPECT_EQ(r.steps[2].loss, 0.125);
  // No step-time tag: wall time between logged steps over the steps between them.
  EXPECT_DOUBLE_EQ(r.steps[1].stepMs, 250.0);
  EXPECT_DOUBLE_EQ(r.steps[2].stepMs, 250.0);
  EXPECT_EQ(r.config.model.name, "external");
  EXPECT_EQ(r.config.mode, PrecisionMode::Fp32);
  EXPECT_EQ(r.name, "run");
  EXPECT_FALSE(validateRunConfig(r.config).has_value());
}

TEST(TensorBoardImport, AFallingLossScaleIsASkippedStepAndUnknownTagsAreKept) {
  std::vector<std::string> recs{versionEvent("brain.Event:2")};
  const float scales[] = {65536, 65536, 32768, 16384, 16384, 32768};
  for (int s = 1; s <= 6; ++s) {
    recs.push_back(scalarEvent(s, s, "loss", 1.0f / float(s)));
    recs.push_back(scalarEvent(s, s, "amp/loss_scale", scales[s - 1]));
    recs.push_back(scalarEvent(s, s, "my/custom", float(s * 10)));
    if (s % 3 == 0) recs.push_back(scalarEvent(s, s, "val_acc", 50.0f + float(s)));  // percent
  }
  const RunRecord r = importOne(framed(recs));
  ASSERT_EQ(r.steps.size(), 6u);
  std::vector<std::int64_t> skipped;
  for (const auto& m : r.steps)
    if (m.skipped) skipped.push_back(m.step);
  EXPECT_EQ(skipped, (std::vector<std::int64_t>{2, 3}));  // the scale fell after steps 2 and 3
  EXPECT_EQ(r.steps[1].scaleEvent, "backoff");
  EXPECT_EQ(r.steps[4].scaleEvent, "growth");
  EXPECT_EQ(r.steps[1].scaleAfter, 32768.f);
  EXPECT_EQ(r.config.mode, PrecisionMode::AmpFp16);
  ASSERT_TRUE(r.steps[2].testAcc.has_value());
  EXPECT_DOUBLE_EQ(*r.steps[2].testAcc, 0.53);
  // The unknown tag: listed in the events and the warnings, its values kept in the summary.
  const QJsonArray kept = r.summary["imported_scalars"].toObject()["my/custom"].toArray();
  ASSERT_EQ(kept.size(), 6);
  EXPECT_EQ(kept[5].toArray()[0].toDouble(), 6);
  EXPECT_EQ(kept[5].toArray()[1].toDouble(), 60);
  EXPECT_TRUE(r.events.join('\n').contains("my/custom"));
  EXPECT_TRUE(r.warnings.join('\n').contains("my/custom"));
}

TEST(TensorBoardImport, ScalarTensorsAndHistogramsOfOtherWriters) {
  // TF2 writes scalars as rank-0 float tensors, PyTorch's SummaryWriter histograms as
  // HistogramProto over values: these are re-binned by binary exponent.
  tb::Event e;
  e.set_step(3);
  tb::Summary::Value* loss = e.mutable_summary()->add_value();
  loss->set_tag("train_loss");
  loss->mutable_tensor()->set_dtype(tb::DT_FLOAT);
  loss->mutable_tensor()->mutable_tensor_shape();
  loss->mutable_tensor()->add_float_val(0.75f);
  tb::Summary::Value* hist = e.mutable_summary()->add_value();
  hist->set_tag("fc1.weight.grad");
  tb::HistogramProto* h = hist->mutable_histo();
  h->set_min(-0.3);
  h->set_max(3e-6);
  // Buckets are [limit[i-1], limit[i]), the first from min, all clamped to [min, max]:
  // [-0.3, -0.25): 5 (exponent -2); [-0.25, 0): 0; [0, 1e-12): 4, SummaryWriter's bucket of the
  // zeros; [1e-12, 1.5e-6): 0; [1.5e-6, 1.9e-6): 7 (exponent -20: 2^-20 = 9.5e-7, 2^-19 = 1.907e-6);
  // [1.9e-6, 3e-6]: 100 across 2^-19, split by log width: log2(2^-19/1.9e-6) / log2(3e-6/1.9e-6)
  // = 0.00839 of it below (0.839 values) and 99.16 above; whole counts keeping the total 116
  // (5 + 4 + 7 + 100): floors 5, 7, 0, 99 and the largest remainder (0.839) gets the last one.
  for (double limit : {-0.25, 0.0, 1e-12, 1.5e-6, 1.9e-6, 3e-6}) h->add_bucket_limit(limit);
  for (double count : {5.0, 0.0, 4.0, 0.0, 7.0, 100.0}) h->add_bucket(count);
  // The weights' own histogram (no "grad" in the tag) and an activation's.
  for (const char* tag : {"fc1.weight", "relu1"}) {
    tb::Summary::Value* v = e.mutable_summary()->add_value();
    v->set_tag(tag);
    *v->mutable_histo() = *h;
  }
  std::string bytes;
  e.SerializeToString(&bytes);
  const RunRecord r = importOne(framed({versionEvent("brain.Event:2"), bytes}));
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].loss, 0.75);
  ASSERT_EQ(r.histograms.size(), 3u);
  EXPECT_EQ(r.histograms[1].second.kind, HistogramKind::Weight);
  EXPECT_EQ(r.histograms[2].second.kind, HistogramKind::Activation);
  const HistogramRecord& g = r.histograms[0].second;
  EXPECT_EQ(r.histograms[0].first, 3);
  EXPECT_EQ(g.tensor, "fc1.weight.grad");
  EXPECT_EQ(g.kind, HistogramKind::WeightGrad);
  EXPECT_EQ(g.unscaled.counts[-2 - kHistMinExp], 5);
  EXPECT_EQ(g.unscaled.counts[kHistBinZero], 4);  // zeros are zeros, not fp16 underflow
  EXPECT_EQ(g.unscaled.counts[-20 - kHistMinExp], 8);
  EXPECT_EQ(g.unscaled.counts[-19 - kHistMinExp], 99);
  EXPECT_EQ(g.unscaled.total, 116);
  EXPECT_EQ(g.unscaled.subnormal, 107);  // below 2^-14
  EXPECT_EQ(g.unscaled.underflow, 0);
  EXPECT_TRUE(r.events.join('\n').contains("re-binned"));
  EXPECT_TRUE(r.events.join('\n').contains("approximate, 3 buckets spanned a power of two"));  // one per tag
  EXPECT_TRUE(r.events.join('\n').contains("12 values in the [0, 1e-12) bucket counted as zeros"));
}

TEST(TensorBoardImport, RefusesWhatItCannotRead) {
  const std::string ok = scalarEvent(1, 1, "loss", 1.f);
  EXPECT_HAS(messageOf<RunRecordError>([&] { importOne(framed({versionEvent("brain.Event:3"), ok})); }),
             "logs/run/events.out.tfevents.1.test: record 1 (offset 0): file_version 'brain.Event:3' is newer");
  EXPECT_HAS(messageOf<RunRecordError>([&] { importOne(framed({versionEvent("garbage"), ok})); }),
             "record 1 (offset 0): file_version 'garbage' is not a TensorBoard event file's");
  EXPECT_HAS(messageOf<RunRecordError>([&] { importOne(framed({versionEvent("brain.Event:2"), std::string(6, '\xff')})); }),
             "record 2 (offset 40): not a TensorBoard Event message");
  std::string damaged = framed({versionEvent("brain.Event:2"), ok});
  damaged[damaged.size() - 6] ^= 0x40;
  EXPECT_HAS(messageOf<RunRecordError>([&] { importOne(damaged); }), "record 2 (offset 40): data CRC mismatch");
  EXPECT_HAS(messageOf<RunRecordError>([&] { importOne(framed({versionEvent("brain.Event:2")})); }),
             "logs/run/: no training loss or other scalar of a training step");
  // A file cut short keeps its whole records and says so.
  const std::string whole = framed({versionEvent("brain.Event:2"), ok, scalarEvent(2, 2, "loss", 0.5f)});
  const RunRecord cut = importOne(whole.substr(0, whole.size() - 5));
  EXPECT_EQ(cut.steps.size(), 1u);
  EXPECT_TRUE(cut.warnings.join('\n').contains("record 3 (offset"));
}

TEST(TensorBoardImport, ALogWrittenByTensorBoardsOwnWriter) {
  // tests/unit/data/make_tensorboard_log.py wrote it with the tensorboard package's
  // EventFileWriter and protos, as PyTorch's SummaryWriter and TensorFlow 2 log.
  QFile f(QStringLiteral(AMP_TEST_SOURCE_DIR "/tests/unit/data/tensorboard_writer.tfevents"));
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const RunRecord r = importOne(f.readAll().toStdString(), "pytorch");
  ASSERT_EQ(r.steps.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.steps[i].loss, double(1.0f / float(i + 1)));
  std::vector<std::int64_t> skipped;
  for (const auto& m : r.steps)
    if (m.skipped) skipped.push_back(m.step);
  // "amp/scale" is logged after scaler.update(), as everyone does: 65536 after step 2, 32768
  // after step 3 (step 3 skipped), 65536 after step 6 (growth at step 6).
  EXPECT_EQ(skipped, std::vector<std::int64_t>{3});
  EXPECT_EQ(r.steps[2].scale, 65536.f);
  EXPECT_EQ(r.steps[2].scaleAfter, 32768.f);
  EXPECT_EQ(r.steps[5].scaleEvent, "growth");
  EXPECT_DOUBLE_EQ(r.steps[1].stepMs, 500.0);  // wall times 0.5 s apart
  ASSERT_TRUE(r.steps[5].testAcc.has_value());
  EXPECT_NEAR(*r.steps[5].testAcc, 0.86, 1e-6);  // 86 %, a float tensor of the scalars plugin
  ASSERT_EQ(r.histograms.size(), 1u);
  // [0, 2e-6): 7 values, a bucket wider than SummaryWriter's zero bucket: spread over the
  // binades it covers (approximate), the total kept.
  EXPECT_EQ(r.histograms[0].second.unscaled.counts[-2 - kHistMinExp], 5);
  EXPECT_EQ(r.histograms[0].second.unscaled.total, 13);
  EXPECT_TRUE(r.summary["imported_scalars"].toObject().contains("hparams/dropout"));
  EXPECT_EQ(r.config.mode, PrecisionMode::AmpFp16);
}

// ---- export ----

// A small real run with a scaler, an injected overflow (a backoff) and histograms.
RunRecord tinyRun() {
  RunConfig c;
  for (const char* kv : {"data.name=spirals", "data.samples=300", "model.name=mlp", "model.hidden=8",
                         "train.batch_size=50", "train.steps=12", "train.eval_every=6", "train.histogram_every=6",
                         "amp.mode=fp16", "scaler.growth_interval=3", "train.inject_nonfinite=4", "seed=5"})
    applyOverride(c, kv);
  Trainer t(c);
  RunRecord r;
  r.config = c;
  r.name = "tiny fp16";
  r.status = "finished";
  RunSummaryBuilder summary;
  while (!t.finished()) {
    StepMetrics m = t.step();
    for (const auto& e : describeEvents(m, c.scaler.growthInterval)) r.events << QString::fromStdString(e);
    for (auto& h : m.histograms) r.histograms.emplace_back(m.step, h);
    m.histograms.clear();
    summary.add(m);
    r.steps.push_back(m);
  }
  RunSummary s = summary.summary();
  s.status = "finished";
  r.summary = runSummaryToJson(s);
  return r;
}

TEST(TensorBoardExport, ReadsBackExactly) {
  const RunRecord r = tinyRun();
  ASSERT_FALSE(r.histograms.empty());
  const RunRecord back = importOne(tensorboardEventFile(r, 1.7e9));
  // Every file of the run as our formats write it, byte for byte.
  const auto a = runRecordFiles(r), b = runRecordFiles(back);
  for (const char* f : kRunFiles) EXPECT_EQ(a.at(f), b.at(f)) << f;
  EXPECT_EQ(back.name, "tiny fp16");
  EXPECT_TRUE(back.warnings.isEmpty()) << back.warnings.join('\n').toStdString();
}

TEST(TensorBoardExport, ScalarsAndExponentHistogramsAreWhatTensorBoardShows) {
  const RunRecord r = tinyRun();
  const std::string bytes = tensorboardEventFile(r, 1.7e9);
  const auto split = tfevents::splitRecords(bytes, "f");
  std::map<std::string, std::vector<std::pair<std::int64_t, float>>> scalars;
  int histograms = 0;
  for (const auto& rec : split.records) {
    tb::Event e;
    ASSERT_TRUE(e.ParseFromArray(rec.data.data(), int(rec.data.size())));
    if (rec.index == 1) {
      EXPECT_EQ(e.file_version(), "brain.Event:2");
    }
    for (const auto& v : e.summary().value()) {
      if (v.value_case() == tb::Summary::Value::kSimpleValue) scalars[v.tag()].emplace_back(e.step(), v.simple_value());
      if (v.value_case() == tb::Summary::Value::kHisto && v.tag().rfind("exponents_unscaled/weight_grad/", 0) == 0) {
        ++histograms;
        // Bucket k is exponent -40 + k: the counts are the run's own.
        const std::string tensor = v.tag().substr(std::strlen("exponents_unscaled/weight_grad/"));
        const auto it = std::find_if(r.histograms.begin(), r.histograms.end(), [&](const auto& p) {
          return p.first == e.step() && p.second.tensor == tensor && p.second.kind == HistogramKind::WeightGrad;
        });
        ASSERT_NE(it, r.histograms.end());
        // Bucket [e, e + 1) on the log2 axis is exponent e, [-41, -40) the zeros, [18, 19) inf
        // and NaN; empty end buckets left out, min and max the outer edges, num every value.
        const tb::HistogramProto& p = v.histo();
        const ExponentHistogram& want = it->second.unscaled;
        ASSERT_GT(p.bucket_size(), 0);
        EXPECT_EQ(p.num(), double(want.total));
        EXPECT_GT(p.bucket(0), 0);
        EXPECT_GT(p.bucket(p.bucket_size() - 1), 0);
        EXPECT_EQ(p.max(), p.bucket_limit(p.bucket_size() - 1));
        double seen = 0;
        for (int i = 0; i < p.bucket_size(); ++i) {
          const double left = i == 0 ? p.min() : p.bucket_limit(i - 1);
          EXPECT_EQ(p.bucket_limit(i), left + 1);  // never backwards
          const std::int64_t n = left == kTbZeroBucketLeft      ? want.counts[kHistBinZero]
                                 : left == kTbNonFiniteBucketLeft ? want.counts[kHistBinInf] + want.counts[kHistBinNan]
                                                                   : want.counts[int(left) - kHistMinExp];
          EXPECT_EQ(p.bucket(i), double(n)) << "bucket from " << left;
          seen += p.bucket(i);
        }
        EXPECT_EQ(seen, double(want.total));
      }
    }
  }
  EXPECT_GT(histograms, 0);
  ASSERT_EQ(scalars["train/loss"].size(), r.steps.size());
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    EXPECT_EQ(scalars["train/loss"][i].second, float(r.steps[i].loss));
    EXPECT_EQ(scalars["amp/loss_scale"][i].second, r.steps[i].scale);
    EXPECT_EQ(scalars["amp/skipped"][i].second, r.steps[i].skipped ? 1.f : 0.f);
  }
  EXPECT_EQ(scalars["amp/skipped"][3].second, 1.f);  // the injected overflow at step 4
  EXPECT_EQ(scalars["test/accuracy"].size(), 2u);
}

TEST(TensorBoardExport, AFolderTensorBoardAndFileOpenRead) {
  QTemporaryDir tmp;
  const RunRecord r = tinyRun();
  const auto files = writeTensorBoardFolder({&r}, tmp.path() + "/tb");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].contains("/tb/0-tiny_fp16/events.out.tfevents."));
  // File > Open and `export --run` read the folder as runs.
  const auto runs = openAnything(tmp.path() + "/tb");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].record.steps.size(), r.steps.size());
  // A second export into the same folder would make TensorBoard show both: refused, nothing written.
  EXPECT_HAS(messageOf<RunRecordError>([&] { writeTensorBoardFolder({&r}, tmp.path() + "/tb"); }),
             "0-tiny_fp16: already holds TensorBoard event files");
  EXPECT_EQ(QDir(tmp.path() + "/tb/0-tiny_fp16").entryList(QDir::Files).size(), 1);
}

// ---- the run-folder format's version and external runs ----

TEST(RunFormatVersion, WrittenAndANewerOneRefusedInOneLine) {
  RunConfig c;
  EXPECT_EQ(configToJson(c)["format_version"].toInt(), kRunFormatVersion);
  RunConfig back;
  EXPECT_NO_THROW(applyConfigJson(back, configToJson(c)));
  QJsonObject newer = configToJson(c);
  newer["format_version"] = kRunFormatVersion + 1;
  EXPECT_HAS(messageOf<ConfigError>([&] { applyConfigJson(back, newer); }),
             "format_version 2 is newer than this AMP Studio reads (1)");
  QTemporaryDir tmp;
  RunOutputWriter(tmp.path(), c);
  QFile f(tmp.path() + "/config.json");
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(QJsonDocument(newer).toJson());
  f.close();
  EXPECT_HAS(messageOf<RunRecordError>([&] { loadRunFolder(tmp.path()); }),
             "config.json: format_version 2 is newer than this AMP Studio reads");
}

TEST(ExternalRuns, AreShownButNeverTrained) {
  RunConfig c;
  applyOverride(c, "model.name=external");
  applyOverride(c, "data.name=external");
  EXPECT_FALSE(validateRunConfig(c).has_value());
  EXPECT_TRUE(c.isExternal());
  EXPECT_HAS(messageOf<ConfigError>([&] { Trainer t(c); }),
             "model.name=external: this run was recorded outside AMP Studio");
}

}  // namespace
}  // namespace amp
