// Config files (--config FILE, the app's Open config): the real loader, applyConfigFile, on a
// file holding the input. Refusals are ConfigErrors; anything it accepts must survive being
// written back (config_roundtrip.h), and validation must answer without throwing.
#include <cstdint>

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "tests/fuzz/config_roundtrip.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  static const QString path = fuzz::scratchPath(QStringLiteral("config.json"));
  fuzz::writeFile(path, fuzz::bytesOf(data, size));
  RunConfig c;
  try {
    applyConfigFile(c, path.toStdString());
  } catch (const ConfigError& e) {
    fuzz::refused(e);
    return 0;
  }
  (void)validateRunConfig(c);
  fuzz::checkConfigRoundTrip(c);
  return 0;
}
