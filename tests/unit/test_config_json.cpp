// Config JSON found by fuzzing (tests/fuzz/fuzz_config_json, fuzz_config_set): numbers a double
// cannot turn into an integer, and values that changed on their way through configToJson.
#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <cstdint>
#include <limits>

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "test_support.h"

using namespace amp;

namespace {

QJsonObject json(const char* text) { return QJsonDocument::fromJson(text).object(); }

// What saving a config as JSON text and reading it back gives (config.json, checkpoints, .ampx).
std::vector<std::pair<std::string, std::string>> throughJson(const RunConfig& c) {
  RunConfig back;
  applyConfigJson(back, QJsonDocument::fromJson(QJsonDocument(configToJson(c)).toJson()).object());
  return flattenConfig(back);
}

}  // namespace

TEST(ConfigJson, NumbersBeyondAnIntegerAreNumbersOrOneLineErrors) {
  // 1e300 was cast to long long before its range was checked (undefined behaviour).
  RunConfig c;
  applyConfigJson(c, json(R"({"optimizer": {"lr": 1e300}, "scaler": {"init_scale": -1e300}})"));
  EXPECT_EQ(c.optimizer.lr, 1e300);
  EXPECT_EQ(c.scaler.initScale, -1e300);
  EXPECT_EQ(test::messageOf<ConfigError>([&] { applyConfigJson(c, json(R"({"train": {"steps": 1e300}})")); }),
            "train.steps: expected an integer, got '1.0000000000000001e+300'");
  EXPECT_EQ(throughJson(c), flattenConfig(c));
}

TEST(ConfigJson, NegativeZeroAndNonFiniteNumbersSurviveTheRoundTrip) {
  // QJsonValue stores -0 as the integer 0, and JSON text has no inf (Qt writes null, which
  // the reader then refused): such values go as the key's text.
  RunConfig c;
  setConfigValue(c, "optimizer.weight_decay", "-0");
  setConfigValue(c, "scaler.max_scale", "inf");
  setConfigValue(c, "schedule.min_lr", "-inf");
  setConfigValue(c, "train.clip_norm", "nan");
  ASSERT_TRUE(std::signbit(c.optimizer.weightDecay));
  EXPECT_EQ(throughJson(c), flattenConfig(c));
}

TEST(ConfigIntegers, FractionsAreRefusedNotTruncated) {
  // strtod shared strtoll's end pointer: "2.5" became 2 and "1.5e300" became 1.
  RunConfig c;
  EXPECT_EQ(test::messageOf<ConfigError>([&] { setConfigValue(c, "train.steps", "2.5"); }),
            "train.steps: expected an integer, got '2.5'");
  EXPECT_EQ(test::messageOf<ConfigError>([&] { setConfigValue(c, "train.steps", "1.5e300"); }),
            "train.steps: expected an integer, got '1.5e300'");
  setConfigValue(c, "train.steps", "3.0");
  EXPECT_EQ(c.train.steps, 3);
  setConfigValue(c, "train.steps", "1.2e3");
  EXPECT_EQ(c.train.steps, 1200);
}

TEST(ConfigJson, ExtremeIntegersSurviveTheRoundTrip) {
  // A JSON number is a double: list items beyond 2^53 were rounded (...993 came back ...992),
  // and INT64_MIN went through llabs(), which overflows.
  RunConfig c;
  setConfigValue(c, "model.hidden", "9007199254740993,4");
  setConfigValue(c, "train.inject_nonfinite", "9223372036854775807");
  setConfigValue(c, "schedule.step_size", std::to_string(std::numeric_limits<std::int64_t>::min()));
  EXPECT_EQ(throughJson(c), flattenConfig(c));
  EXPECT_EQ(configToJson(c)["model"].toObject()["hidden"].toArray()[0].toString(), "9007199254740993");
}

namespace {
// A config file with this text, read as `run CONFIG.json` reads it.
RunConfig fromFile(const std::string& text) {
  const std::string path = ::testing::TempDir() + "/config_json_" +
                           std::to_string(std::hash<std::string>{}(text)) + ".json";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  RunConfig c;
  applyConfigFile(c, path);
  return c;
}

std::string refusal(const std::string& text) {
  try {
    fromFile(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// Issue 24: integers in a config file are read as written, never through a double (2^53 + 1
// became 2^53, and 2^64 - 1, which the seed allows, was refused).
TEST(ConfigJson, IntegersInAFileAreReadExactly) {
  EXPECT_EQ(fromFile(R"({"seed": 9007199254740993})").seed, 9007199254740993ull);
  EXPECT_EQ(fromFile(R"({"seed": 18446744073709551615})").seed, std::numeric_limits<std::uint64_t>::max());
  const RunConfig c = fromFile(R"({"model": {"hidden": [300, 3]}, "train": {"steps": 7}})");
  ASSERT_EQ(c.model.hidden.size(), 2u);
  EXPECT_EQ(c.model.hidden[0], 300);
  EXPECT_EQ(c.train.steps, 7);
  EXPECT_EQ(fromFile(R"({"optimizer": {"lr": 1e-3}})").optimizer.lr, 1e-3);
  EXPECT_NE(refusal(R"({"seed": 18446744073709551616})").find("seed"), std::string::npos);
}

// A key given twice, in one spelling or two, is refused naming it (Qt kept one silently).
TEST(ConfigJson, KeysGivenTwiceAreRefused) {
  EXPECT_NE(refusal(R"({"seed": 1, "seed": 2})").find("seed: given twice"), std::string::npos);
  EXPECT_NE(refusal(R"({"scaler.kind": "static", "scaler": {"kind": "none"}})").find("scaler.kind: given twice"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"scaler": {"kind": "none"}, "scaler": {"init_scale": 8}})").find("scaler: given twice"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"scaler": {"kind": "static", "init_scale": 8}, "seed": 3})"), "");
  EXPECT_EQ(refusal(R"({"name": "a \"quoted\" \u00e9 name", "seed": 3})"), "");
}
