// Config keys: one-line errors naming the key, presets that validate, JSON files.
#include <gtest/gtest.h>

#include <QTemporaryDir>
#include <sys/stat.h>

#include <clocale>
#include <fstream>

#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/io/config_json.h"
#include "test_support.h"

using namespace amp;

namespace {
const auto errorOf = test::messageOf<std::exception>;
}  // namespace

TEST(Config, BadValuesNameTheKeyAndWhatWasExpected) {
  RunConfig c;
  EXPECT_EQ(errorOf([&] { setConfigValue(c, "scaler.growth_interval", "abc"); }),
            "scaler.growth_interval: expected an integer, got 'abc'");
  EXPECT_EQ(errorOf([&] { setConfigValue(c, "optimizer.lr", "fast"); }),
            "optimizer.lr: expected a number, got 'fast'");
  EXPECT_EQ(errorOf([&] { setConfigValue(c, "amp.mode", "fp4"); }),
            "amp.mode: expected one of fp32 | fp16 | bf16 | pure_fp16 | fp8, got 'fp4'");
  EXPECT_EQ(errorOf([&] { setConfigValue(c, "fp8.recipe", "fp7"); }),
            "fp8.recipe: expected one of delayed | current | unscaled | mxfp8 | blockwise | nvfp4, got 'fp7'");
  EXPECT_NE(errorOf([&] { setConfigValue(c, "nope.key", "1"); }).find("unknown config key 'nope.key'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { applyOverride(c, "noequals"); }).find("key=value"), std::string::npos);
}

TEST(Config, ValidationCatchesSizesAndNonFiniteValues) {
  auto problem = [](const std::string& key, const std::string& value) {
    RunConfig c;
    setConfigValue(c, key, value);
    return validateRunConfig(c).value_or("");
  };
  EXPECT_EQ(problem("train.batch_size", "0"), "train.batch_size must be > 0");
  EXPECT_EQ(problem("model.width", "-4"), "model.width must be > 0");
  EXPECT_EQ(problem("optimizer.lr", "nan"), "optimizer.lr must be a finite number >= 0");
  EXPECT_EQ(problem("optimizer.lr", "inf"), "optimizer.lr must be a finite number >= 0");
  EXPECT_EQ(problem("scaler.growth_factor", "0.5"), "scaler.growth_factor must be > 1");
  EXPECT_EQ(problem("scaler.backoff_factor", "1"), "scaler.backoff_factor must be in (0, 1)");
  EXPECT_EQ(problem("train.inject_nonfinite", "0"), "train.inject_nonfinite steps are 1-based and must be > 0");
  RunConfig ok;
  EXPECT_FALSE(validateRunConfig(ok).has_value());
}

TEST(Config, EveryPresetAndVariantValidates) {
  for (const auto& p : presets()) {
    EXPECT_FALSE(validateRunConfig(presetConfig(p)).has_value()) << p.name;
    for (const auto& v : p.variants)
      EXPECT_FALSE(validateRunConfig(presetConfig(p, &v)).has_value()) << p.name << "/" << v.label;
  }
}

// The GPU lesson is the recipe as published (the peers' pytorch_recipe_gpu.py): width 4096, batch
// 512, 3 layers, 50 batches x 3 epochs = 150 steps, on the GPU, in the three modes; its CPU-sized
// form is the CPU recipe's size on the CPU, with the same three modes.
TEST(Config, TensorCoreLessonIsThePublishedRecipeWithACpuSizedFallback) {
  const Preset* p = findPreset("tensor-cores");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->needsGpu);
  ASSERT_EQ(p->variants.size(), 3u);
  std::vector<PrecisionMode> modes;
  for (const auto& v : p->variants) {
    const RunConfig c = presetConfig(*p, &v);
    EXPECT_EQ(c.backend, "cuda");
    EXPECT_EQ(c.model.name, "recipe_mlp");
    EXPECT_EQ(c.model.width, 4096);
    EXPECT_EQ(c.model.layers, 3);
    EXPECT_EQ(c.train.batchSize, 512);
    EXPECT_EQ(c.data.batches, 50);
    EXPECT_EQ(c.train.steps, 150);
    EXPECT_FALSE(c.tf32);
    modes.push_back(c.mode);
    const RunConfig cpu = presetConfig(*p, &v, /*cpuSized=*/true);
    EXPECT_EQ(cpu.backend, "cpu");
    EXPECT_EQ(cpu.model.width, 1024);
    EXPECT_EQ(cpu.train.batchSize, 256);
    EXPECT_EQ(cpu.mode, c.mode);
    EXPECT_FALSE(validateRunConfig(cpu).has_value());
  }
  EXPECT_EQ(modes, (std::vector<PrecisionMode>{PrecisionMode::Fp32, PrecisionMode::AmpFp16,
                                               PrecisionMode::AmpBf16}));
  EXPECT_TRUE(findPreset("recipe")->cpuSized.empty());
}

TEST(Config, JsonFilesRoundTripAndReportTheirErrors) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("c.json").toStdString();
  {
    std::ofstream f(path);
    f << R"({"amp": {"mode": "bf16"}, "scaler": {"growth_interval": 3, "init_scale": 1024},
            "train": {"inject_nonfinite": [2, 7]}, "autocast": {"softmax": "lower_precision"}})";
  }
  RunConfig c;
  applyConfigFile(c, path);
  EXPECT_EQ(c.mode, PrecisionMode::AmpBf16);
  EXPECT_EQ(c.scaler.growthInterval, 3);
  EXPECT_EQ(c.scaler.initScale, 1024.0);
  EXPECT_EQ(c.train.injectNonFinite, (std::vector<std::int64_t>{2, 7}));
  EXPECT_EQ(c.autocastOverrides.at("softmax"), "lower_precision");
  // Written back and read again: the same flattened keys.
  RunConfig again;
  applyConfigJson(again, configToJson(c));
  EXPECT_EQ(flattenConfig(again), flattenConfig(c));

  { std::ofstream f(path); f << R"({"scaler": {"growth_interval": "often"}})"; }
  RunConfig bad;
  EXPECT_EQ(errorOf([&] { applyConfigFile(bad, path); }),
            path + ": scaler.growth_interval: expected an integer, got 'often'");
  { std::ofstream f(path); f << "{ not json"; }
  EXPECT_NE(errorOf([&] { applyConfigFile(bad, path); }).find(path + ": not valid JSON"), std::string::npos);
  EXPECT_NE(errorOf([&] { applyConfigFile(bad, "/nonexistent/x.json"); }).find("/nonexistent/x.json: cannot open"),
            std::string::npos);
}

// Numbers far outside any integer's range are floats to the config and must arrive unchanged
// (the check for an integral value once converted them to long long first: undefined behaviour,
// which the asan preset's UBSan run stops at).
TEST(Config, JsonNumbersBeyondTheIntegerRangeStayFloats) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("c.json").toStdString();
  { std::ofstream f(path); f << R"({"optimizer": {"lr": 1e30}, "scaler": {"init_scale": 1.5e300}})"; }
  RunConfig c;
  applyConfigFile(c, path);
  EXPECT_EQ(c.optimizer.lr, 1e30);
  EXPECT_EQ(c.scaler.initScale, 1.5e300);
  // An integer key given such a number is refused with the key's name, not wrapped.
  { std::ofstream f(path); f << R"({"train": {"steps": -1e30}})"; }
  RunConfig bad;
  EXPECT_NE(errorOf([&] { applyConfigFile(bad, path); }).find("train.steps"), std::string::npos);
}

TEST(Config, NumbersIgnoreTheLocale) {
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = old ? old : "C";
  // de_DE may not be installed; any locale with a comma decimal point shows the problem.
  if (!std::setlocale(LC_NUMERIC, "de_DE.UTF-8")) GTEST_SKIP() << "no de_DE locale here";
  RunConfig c;
  setConfigValue(c, "optimizer.lr", "0.5");
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_EQ(c.optimizer.lr, 0.5);
}

namespace amp {
namespace {
// Integers wrapped into the member's type: model.layers=4294967299 trained 3 layers and
// train.epochs=4294967297 ran 1 epoch (exit 0); seed=-1 became another seed than the one asked.
TEST(ConfigIntegers, OutOfRangeIsRefusedNotWrapped) {
  RunConfig c;
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"model.layers", "4294967299"}, {"train.epochs", "4294967297"}, {"seed", "-1"},
           {"scaler.growth_interval", "-2147483649"}}) {
    try {
      setConfigValue(c, key, value);
      ADD_FAILURE() << key << "=" << value << " was accepted";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(key + ": expected an integer from"), std::string::npos) << what;
      EXPECT_NE(what.find("'" + value + "'"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(c.model.layers, RunConfig{}.model.layers);  // nothing half-applied
  setConfigValue(c, "model.layers", "2147483647");      // the largest that fits is still a number
  EXPECT_EQ(c.model.layers, 2147483647);
  setConfigValue(c, "seed", "9223372036854775807");
  EXPECT_EQ(c.seed, 9223372036854775807ull);
}
}  // namespace
}  // namespace amp

namespace amp {
namespace {
// run --preset spirals --set train.threads=100000 ended in SIGSEGV inside OpenMP (exit 139).
TEST(ConfigIntegers, AbsurdThreadCountsAreRefused) {
  RunConfig c;
  c.train.threads = 100000;
  const auto e = validateRunConfig(c);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("train.threads must be from 0 (all cores) to 1024, got 100000"), std::string::npos) << *e;
  c.train.threads = kMaxTrainThreads;
  EXPECT_FALSE(validateRunConfig(c).has_value());
}
}  // namespace
}  // namespace amp

namespace amp {
namespace {
// `run FIFO` hung forever and `run /dev/zero` ate memory at about 1 GB/s.
TEST(ConfigFiles, OnlyRegularFilesAreRead) {
  QTemporaryDir dir;
  const std::string fifo = dir.filePath("config.json").toStdString();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  RunConfig c;
  EXPECT_EQ(errorOf([&] { applyConfigFile(c, fifo); }), fifo + ": not a regular file (a folder, device or pipe)");
  EXPECT_EQ(errorOf([&] { applyConfigFile(c, "/dev/zero"); }),
            "/dev/zero: not a regular file (a folder, device or pipe)");
  EXPECT_EQ(errorOf([&] { applyConfigFile(c, dir.path().toStdString()); }),
            dir.path().toStdString() + ": not a regular file (a folder, device or pipe)");
}
}  // namespace
}  // namespace amp
