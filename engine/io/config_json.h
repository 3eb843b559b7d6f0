// JSON config files <-> RunConfig. Nested objects map to dotted keys ({"scaler": {"kind":
// "static"}} is scaler.kind); errors are one line naming the file and the key.
#pragma once

#include <QJsonObject>
#include <string>

#include "engine/config/config_schema.h"
#include "engine/io/json_number_scan.h"

namespace amp {

// The run-folder format's version: config.json carries it as "format_version" (a file without it
// is version 1). A reader refuses a newer one in one line instead of misreading it.
inline constexpr int kRunFormatVersion = 1;

// Applies a JSON file's keys on top of `c`. Throws ConfigError("FILE: ...").
void applyConfigFile(RunConfig& c, const std::string& path);
// Applies a parsed JSON object (keys relative to `prefix`). `texts` (scanJsonNumbers of the
// object's text, where there is one) gives integers as written, not through a double. Throws
// ConfigError.
void applyConfigJson(RunConfig& c, const QJsonObject& obj, const std::string& prefix = "",
                     const JsonNumberTexts* texts = nullptr);
// Nested JSON of every key (as the file format expects).
QJsonObject configToJson(const RunConfig& c);

}  // namespace amp
