// The config property both config targets check: whatever a config file or --set accepted is
// written back (flattenConfig, configToJson, as summary.json, checkpoints and .ampx files do)
// in a form the same parsers accept again, with the same value of every key. A run saved with
// its config must reopen with that config.
#pragma once

#include <QJsonDocument>
#include <string>

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "tests/fuzz/fuzz_support.h"

namespace amp::fuzz {

inline std::string flatText(const RunConfig& c) {
  std::string s;
  for (const auto& [k, v] : flattenConfig(c)) s += k + "=" + v + "\n";
  return s;
}

// JSON text is Unicode: a string key given bytes that are not UTF-8 (--set name=$'\xff') comes
// back with U+FFFD in their place, as any JSON writer does. That is no loss worth a finding.
inline std::string asUtf8(const std::string& s) { return QString::fromStdString(s).toStdString(); }

inline void checkConfigRoundTrip(const RunConfig& c) {
  const std::string before = flatText(c);
  // Key by key, as the UI's fields and `--set` do.
  RunConfig viaText;
  for (const auto& [k, v] : flattenConfig(c)) {
    try {
      setConfigValue(viaText, k, v);
    } catch (const ConfigError& e) {
      fail("flattenConfig wrote " + k + "=" + v + ", which setConfigValue refuses: " + e.what());
    }
  }
  if (flatText(viaText) != before) fail("config changed through flattenConfig/setConfigValue:\n" + before +
                                        "--- became ---\n" + flatText(viaText));
  // As nested JSON text, as config.json and checkpoints store it.
  RunConfig viaJson;
  try {
    applyConfigJson(viaJson, QJsonDocument::fromJson(QJsonDocument(configToJson(c)).toJson()).object());
  } catch (const ConfigError& e) {
    fail(std::string("configToJson wrote a config that applyConfigJson refuses: ") + e.what() + "\n" + before);
  }
  if (flatText(viaJson) != asUtf8(before))
    fail("config changed through configToJson/applyConfigJson:\n" + before + "--- became ---\n" + flatText(viaJson));
}

}  // namespace amp::fuzz
