// `--set key=value` overrides: each line of the input is one --set argument, applied in order
// to the default config as the CLI does. Refusals are ConfigErrors; an accepted config must
// survive being written back (config_roundtrip.h).
#include <cstdint>
#include <string>

#include "engine/config/config_schema.h"
#include "tests/fuzz/config_roundtrip.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  const std::string text(reinterpret_cast<const char*>(data), size);
  RunConfig c;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string arg = text.substr(pos, end - pos);
    pos = end + 1;
    if (arg.empty()) continue;
    try {
      applyOverride(c, arg);
    } catch (const ConfigError& e) {
    fuzz::refused(e);
      return 0;  // the CLI stops at the first bad --set
    }
  }
  (void)validateRunConfig(c);
  fuzz::checkConfigRoundTrip(c);
  return 0;
}
