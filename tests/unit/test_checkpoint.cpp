// Checkpoints: N steps + save + load into a fresh Trainer + M steps must equal N+M uninterrupted
// steps bit for bit, and every format round-trips (damaged checkpoints: test_checkpoint_errors).
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <bit>
#include <cstring>

#include "engine/backend/cpu_backend.h"
#include "engine/config/config_schema.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/io/zip_entries.h"
#include "tests/unit/checkpoint_test_support.h"

namespace amp {
namespace {

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void expectSameMetrics(const StepMetrics& a, const StepMetrics& b) {
  SCOPED_TRACE("step " + std::to_string(a.step));
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(bits(a.loss), bits(b.loss));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(a.scale), std::bit_cast<std::uint32_t>(b.scale));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(a.scaleAfter), std::bit_cast<std::uint32_t>(b.scaleAfter));
  EXPECT_EQ(a.growthTracker, b.growthTracker);
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.scaleEvent, b.scaleEvent);
  EXPECT_EQ(bits(a.gradNorm), bits(b.gradNorm));
  EXPECT_EQ(a.clipped, b.clipped);
  EXPECT_EQ(bits(a.lr), bits(b.lr));
  EXPECT_EQ(a.firstNonFinite, b.firstNonFinite);
  EXPECT_EQ(a.injected, b.injected);
  EXPECT_EQ(bits(a.lostUpdateFrac), bits(b.lostUpdateFrac));
  EXPECT_EQ(a.testLoss.has_value(), b.testLoss.has_value());
  EXPECT_EQ(a.testAcc.has_value(), b.testAcc.has_value());
  EXPECT_EQ(bits(a.testLoss.value_or(0)), bits(b.testLoss.value_or(0)));
  EXPECT_EQ(bits(a.testAcc.value_or(0)), bits(b.testAcc.value_or(0)));
  EXPECT_EQ(a.diverged, b.diverged);
  ASSERT_EQ(a.histograms.size(), b.histograms.size());
  for (std::size_t i = 0; i < a.histograms.size(); ++i) {
    EXPECT_EQ(a.histograms[i].tensor, b.histograms[i].tensor);
    EXPECT_EQ(a.histograms[i].scaled.counts, b.histograms[i].scaled.counts);
  }
}

// Runs config uninterrupted, and again with a save after `n` steps and a resume in a new
// Trainer built from the checkpoint's config; everything must match bit for bit.
void checkBitExactResume(const RunConfig& config, int n) {
  QTemporaryDir dir;
  Trainer whole(config);
  std::vector<StepMetrics> expected;
  while (!whole.finished()) expected.push_back(whole.step());

  const QString path = dir.filePath("ckpt/" + checkpointFileName(n));
  QByteArray metrics;
  {
    Trainer first(config);
    for (int i = 0; i < n; ++i) {
      const StepMetrics m = first.step();
      expectSameMetrics(expected[i], m);
      metrics += metricsLine(m);
    }
    saveCheckpoint(first, path, metrics);
  }
  const CheckpointInfo info = readCheckpointInfo(path);
  EXPECT_EQ(info.step, n);
  EXPECT_EQ(flattenConfig(info.config), flattenConfig(config));
  EXPECT_EQ(checkpointMetrics(path), metrics);

  Trainer resumed(info.config);
  loadCheckpoint(resumed, path);
  EXPECT_EQ(resumed.stepsDone(), n);
  std::size_t i = n;
  while (!resumed.finished()) {
    ASSERT_LT(i, expected.size());
    expectSameMetrics(expected[i++], resumed.step());
  }
  EXPECT_EQ(i, expected.size());
  EXPECT_EQ(stateBytes(resumed), stateBytes(whole));
}

// Step 8: two clean steps into a growth interval of 3, so the tracker carries over.
TEST(CheckpointResume, SpiralsAdamFp16WithOverflowsIsBitExact) { checkBitExactResume(spiralsConfig(), 8); }
TEST(CheckpointResume, RecipeSgdMomentumIsBitExact) { checkBitExactResume(recipeConfig(), 5); }
TEST(CheckpointResume, PureFp16BatchNormDropoutIsBitExact) { checkBitExactResume(pureFp16Config(), 11); }

TEST(CheckpointResume, ResumeRightAfterAnOverflowAndAtStepZero) {
  checkBitExactResume(spiralsConfig(), 10);  // step 10 injected: the scale just backed off
  checkBitExactResume(recipeConfig(), 0);
}

// Loading a checkpoint writes the masters in place, so the 16-bit weight copies a backend keeps
// from step to step (Backend::keepsWeightCopies, the CUDA backend's default) must be forgotten,
// or the next forward computes with the weights from before the load. A trainer that ran on
// past its checkpoint loads it and must then step exactly as the uninterrupted run did; and that
// run, with the copies kept, is the run without them (histograms, evals and skipped steps too).
TEST(CheckpointResume, LoadingIntoARunningTrainerForgetsItsWeightCopies) {
  auto keepingCopies = [] {
    auto be = std::make_unique<CpuBackend>();
    be->setKeepsWeightCopies(true);
    return be;
  };
  for (const RunConfig& config : {recipeConfig(), spiralsConfig()}) {
    QTemporaryDir dir;
    std::vector<StepMetrics> expected;
    Trainer plain(config);
    while (!plain.finished()) expected.push_back(plain.step());
    {
      Trainer whole(config, keepingCopies());
      for (const StepMetrics& e : expected) expectSameMetrics(e, whole.step());
      EXPECT_EQ(stateBytes(whole), stateBytes(plain));
    }
    const int n = 5;
    const QString path = dir.filePath("ckpt/" + checkpointFileName(n));
    Trainer t(config, keepingCopies());
    QByteArray metrics;
    for (int i = 0; i < n; ++i) metrics += metricsLine(t.step());
    saveCheckpoint(t, path, metrics);
    for (int i = 0; i < 3; ++i) t.step();  // the copies now follow step 8's masters
    loadCheckpoint(t, path);
    for (std::size_t i = n; i < expected.size(); ++i) expectSameMetrics(expected[i], t.step());
    EXPECT_TRUE(t.finished());
    EXPECT_EQ(stateBytes(t), stateBytes(plain));
  }
}

// ---- formats ---------------------------------------------------------------------------------

TEST(CheckpointFormat, ManifestRoundTrips) {
  CheckpointInfo m;
  m.created = "2024-01-02T03:04:05Z";
  m.config = spiralsConfig();
  m.config.seed = 0xFEDCBA9876543210ull;  // above 2^53 and 2^63: must survive JSON exactly
  m.step = 123;
  m.epoch = 4;
  m.schedulerSteps = 123;
  m.loader = {4, 3, {0xFFFFFFFFFFFFFFFFull, 1, 2, 0x8000000000000000ull, 1, 0x3FF0000000000000ull}, 480, 64};
  m.parameters = {{"0.weight", DType::F32, {32, 2}}, {"0.bias", DType::F16, {32}}};
  m.buffers = {{"1.running_mean", DType::F32, {32}}};
  m.optimizerName = "adam";
  m.optimizerScalars = {{"step", 123}, {"0.weight.started", 1}};
  m.entries["model.safetensors"] = {sha256Hex("abc"), 3};
  const CheckpointInfo r = manifestFromJson(manifestToJson(m));
  // Checkpoints written before seeds were checked against their range hold such a seed as the
  // same 64 bits, signed: "-81985529216486896". They still load, with the seed they stood for.
  QByteArray legacy = manifestToJson(m);
  legacy.replace("\"18364758544493064720\"", "\"-81985529216486896\"");
  ASSERT_TRUE(legacy.contains("-81985529216486896"));
  EXPECT_EQ(manifestFromJson(legacy).config.seed, m.config.seed);
  // The largest seed too (JSON's doubles would round it; toLongLong read it as 0).
  CheckpointInfo top = m;
  top.config.seed = 0xFFFFFFFFFFFFFFFFull;
  EXPECT_EQ(manifestFromJson(manifestToJson(top)).config.seed, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(r.formatVersion, kCheckpointFormatVersion);
  EXPECT_EQ(r.appVersion, "0.1.0");
  EXPECT_EQ(r.created, m.created);
  EXPECT_EQ(flattenConfig(r.config), flattenConfig(m.config));
  EXPECT_EQ(r.config.seed, m.config.seed);
  EXPECT_EQ(r.step, 123);
  EXPECT_EQ(r.epoch, 4);
  EXPECT_EQ(r.schedulerSteps, 123);
  EXPECT_EQ(r.loader.rng, m.loader.rng);
  EXPECT_EQ(r.loader.position, 3);
  EXPECT_EQ(r.loader.count, 480);
  EXPECT_EQ(r.loader.batchSize, 64);
  EXPECT_EQ(r.parameters, m.parameters);
  EXPECT_EQ(r.buffers, m.buffers);
  EXPECT_EQ(r.optimizerName, "adam");
  EXPECT_EQ(r.optimizerScalars, m.optimizerScalars);
  ASSERT_EQ(r.entries.count("model.safetensors"), 1u);
  EXPECT_EQ(r.entries.at("model.safetensors").sha256, sha256Hex("abc"));
  EXPECT_EQ(r.entries.at("model.safetensors").bytes, 3);
}

TEST(CheckpointFormat, EntriesHoldWhatTheIssueSpecifies) {
  QTemporaryDir dir;
  Trainer t(spiralsConfig());
  for (int i = 0; i < 4; ++i) t.step();
  const QString path = dir.filePath("c.zip");
  saveCheckpoint(t, path, "{\"step\":1}\n");
  const auto entries = readZipEntries(path);
  for (const char* e : {"manifest.json", "model.safetensors", "optimizer.safetensors", "scaler.json", "metrics.jsonl"})
    EXPECT_EQ(entries.count(e), 1u) << e;

  // scaler.json: PyTorch's GradScaler.state_dict() keys and values.
  const QJsonObject scaler = QJsonDocument::fromJson(entries.at("scaler.json")).object();
  const auto sd = t.scaler().stateDict();
  ASSERT_EQ(static_cast<std::size_t>(scaler.size()), sd.size());
  for (const char* k : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    EXPECT_EQ(scaler.value(k).toDouble(), sd.at(k)) << k;

  // model.safetensors: the parameter names of PyTorch's nn.Sequential state_dict, fp32 masters.
  const SafetensorsFile model = readSafetensors(entries.at("model.safetensors"));
  EXPECT_EQ(model.metadata.at("format"), "pt");
  for (Parameter* p : t.model().parameters()) {
    const SafeTensor* s = model.find(p->name);
    ASSERT_NE(s, nullptr) << p->name;
    EXPECT_EQ(s->dtype, DType::F32);
    const auto bytes = t.backend().toHostBytes(p->value);
    EXPECT_EQ(s->data, QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size())));
  }
  EXPECT_NE(model.find("0.weight"), nullptr);
  EXPECT_NE(model.find("2.bias"), nullptr);
  const SafetensorsFile opt = readSafetensors(entries.at("optimizer.safetensors"));
  EXPECT_NE(opt.find("0.weight.exp_avg"), nullptr);
  EXPECT_NE(opt.find("0.weight.exp_avg_sq"), nullptr);
  EXPECT_EQ(entries.at("metrics.jsonl"), "{\"step\":1}\n");

  // A run without a scaler stores {} (PyTorch's state_dict of a disabled GradScaler).
  RunConfig fp32 = spiralsConfig();
  applyOverride(fp32, "amp.mode=fp32");
  Trainer plain(fp32);
  saveCheckpoint(plain, path, {});
  EXPECT_EQ(QJsonDocument::fromJson(readZipEntries(path).at("scaler.json")).object().size(), 0);
  Trainer again(fp32);
  EXPECT_NO_THROW(loadCheckpoint(again, path));
}

TEST(CheckpointFormat, ModelSafetensorsReadsInNumpy) {
  QProcess probe;
  probe.start(AMP_PYTHON, {"-c", "import numpy"});
  if (!probe.waitForFinished(30000) || probe.exitStatus() != QProcess::NormalExit || probe.exitCode() != 0)
    GTEST_SKIP() << "python3 with numpy is not available";
  const char* script = R"(
import json, struct, sys
import numpy as np
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
h.pop('__metadata__', None)
for name in sorted(h):
    e = h[name]
    s, t = e['data_offsets']
    a = np.frombuffer(b[8 + n + s:8 + n + t], dtype={'F32': '<f4', 'F16': '<f2', 'I32': '<i4'}[e['dtype']])
    a = a.reshape(e['shape'])
    print(name, e['dtype'], 'x'.join(map(str, a.shape)), ' '.join(repr(float(v)) for v in a.ravel()))
)";
  for (const RunConfig& config : {spiralsConfig(), pureFp16Config()}) {
    QTemporaryDir dir;
    Trainer t(config);
    for (int i = 0; i < 3; ++i) t.step();
    saveCheckpoint(t, dir.filePath("c.zip"), {});
    QFile f(dir.filePath("model.safetensors"));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(readZipEntries(dir.filePath("c.zip")).at("model.safetensors"));
    f.close();
    QProcess py;
    py.start(AMP_PYTHON, {"-c", script, f.fileName()});
    ASSERT_TRUE(py.waitForFinished(60000));
    ASSERT_EQ(py.exitCode(), 0) << py.readAllStandardError().toStdString();
    std::map<std::string, std::vector<std::string>> rows;
    for (const QByteArray& line : py.readAllStandardOutput().split('\n')) {
      const QList<QByteArray> parts = line.trimmed().split(' ');
      if (parts.size() < 3) continue;
      std::vector<std::string> v;
      for (const auto& p : parts) v.push_back(p.toStdString());
      rows[v[0]] = v;
    }
    std::vector<std::pair<std::string, Tensor*>> all;
    for (Parameter* p : t.model().parameters()) all.emplace_back(p->name, &p->value);
    for (const auto& b : t.model().buffers()) all.push_back(b);
    ASSERT_EQ(rows.size(), all.size());
    for (const auto& [name, tensor] : all) {
      SCOPED_TRACE(name);
      ASSERT_EQ(rows.count(name), 1u);
      const auto& r = rows[name];
      EXPECT_EQ(r[1], *safetensorsDtypeName(tensor->dtype()));
      std::string shape;
      for (auto d : tensor->shape()) shape += (shape.empty() ? "" : "x") + std::to_string(d);
      EXPECT_EQ(r[2], shape);
      std::vector<double> values;
      if (tensor->dtype() == DType::I32)
        for (auto v : t.backend().toHostInt(*tensor)) values.push_back(v);
      else
        for (auto v : t.backend().toHostFloat(*tensor)) values.push_back(v);
      ASSERT_EQ(r.size() - 3, values.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        EXPECT_EQ(std::strtod(r[3 + i].c_str(), nullptr), values[i]) << "element " << i;
    }
  }
}

TEST(CheckpointResumeConfig, ModelAndDataChangesAreRefused) {
  const RunConfig saved = spiralsConfig();
  RunConfig more = saved;
  applyOverride(more, "train.steps=500");
  applyOverride(more, "optimizer.lr=0.001");
  applyOverride(more, "checkpoint.every=10");
  EXPECT_FALSE(resumeConfigError(saved, more));
  for (const char* kv : {"model.hidden=8", "data.samples=100", "seed=1", "amp.mode=bf16", "train.batch_size=8",
                         "optimizer.name=sgd", "data.name=circles"}) {
    RunConfig c = saved;
    applyOverride(c, kv);
    const auto e = resumeConfigError(saved, c);
    ASSERT_TRUE(e) << kv;
    const std::string key = std::string(kv).substr(0, std::string(kv).find('='));
    EXPECT_EQ(e->rfind(key + ":", 0), 0u) << *e;
  }
}

}  // namespace
}  // namespace amp

TEST(CheckpointResume, ADivergedRunStaysStoppedAfterLoading) {
  using namespace amp;
  RunConfig c;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "recipe_mlp"}, {"model.width", "32"}, {"data.batches", "2"},
           {"train.batch_size", "16"}, {"optimizer.lr", "1e30"}, {"train.steps", "30"},
           {"amp.mode", "fp32"}, {"train.histogram_every", "0"}})
    setConfigValue(c, k, v);
  Trainer t(c);
  while (!t.finished()) t.step();
  ASSERT_TRUE(t.diverged());
  QTemporaryDir dir;
  const QString path = dir.filePath("diverged.zip");
  saveCheckpoint(t, path, QByteArray());
  Trainer resumed(readCheckpointInfo(path).config);
  EXPECT_FALSE(resumed.finished());
  loadCheckpoint(resumed, path);
  EXPECT_TRUE(resumed.diverged());
  EXPECT_TRUE(resumed.finished());
}
