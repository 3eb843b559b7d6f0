// Config JSON found by fuzzing (tests/fuzz/fuzz_config_json, fuzz_config_set): numbers a double
// cannot turn into an integer, and values that changed on their way through configToJson.
#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>
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
