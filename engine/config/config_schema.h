// The config keys: one table drives JSON files, --set overrides, presets, the README's key list
// and the UI's field validation. Errors are one line naming the key and what was expected.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/run_config.h"

namespace amp {

// A user's value as an error message shows it: quoted, control characters escaped (a newline
// becomes \n, so the message stays one line) and long values cut to their first `max`
// characters with their length: "'aaaa…' (100000 bytes)".
std::string shownValue(std::string_view value, std::size_t max = 60);

// The longest value a string key takes (names, paths, columns): Linux's PATH_MAX.
inline constexpr std::size_t kMaxStringValueBytes = 4096;

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ConfigKey {
  std::string key;       // "scaler.growth_interval"
  std::string type;      // int | number | bool | string | choice | int_list
  std::string help;      // one line for --help, the README and tooltips
  std::vector<std::string> choices;  // for type "choice"
  std::function<void(RunConfig&, const std::string&)> set;  // throws ConfigError
  std::function<std::string(const RunConfig&)> get;
};

const std::vector<ConfigKey>& configKeys();
const ConfigKey* findConfigKey(const std::string& key);

// Sets one key from its text form ("2000", "true", "fp16", "2,7"). Unknown keys and values of
// the wrong type throw ConfigError. autocast.<op> keys set the op's cast policy.
void setConfigValue(RunConfig& c, const std::string& key, const std::string& value);
// "key=value" as given to --set.
void applyOverride(RunConfig& c, const std::string& keyEqualsValue);

// Cross-field checks after all keys are set (sizes, finiteness, combinations). The first
// problem, as one line naming the key, or nothing.
std::optional<std::string> validateRunConfig(const RunConfig& c);

// Every key with its current value, in table order (summary.json, the UI, checkpoints).
std::vector<std::pair<std::string, std::string>> flattenConfig(const RunConfig& c);

}  // namespace amp
