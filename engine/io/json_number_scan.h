// What QJsonDocument loses from a config file, read from its text: every number as written (a
// JSON number becomes a double there, so {"seed": 9007199254740993} became ...992 and 2^64 - 1
// could not be read at all), and keys given twice ({"seed": 1, "seed": 2}, or a dotted and a
// nested form of one key, {"scaler.kind": ..., "scaler": {"kind": ...}}), which Qt resolves by
// silently keeping one.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace amp {

struct JsonNumberTexts {
  // Flattened key ("scaler.init_scale") -> the number's text, for numbers given directly.
  std::map<std::string, std::string> scalars;
  // Flattened key -> the texts of a list's items (numbers as written, strings unquoted).
  std::map<std::string, std::vector<std::string>> lists;
};

// Scans JSON text that already parsed as valid JSON. Throws ConfigError naming the key (dotted,
// as the README's key list spells it) when one is given twice, in any spelling.
JsonNumberTexts scanJsonNumbers(std::string_view json);

}  // namespace amp
