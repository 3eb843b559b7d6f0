#include "app/cli_main.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string_view>

namespace amp::cli {
namespace {

constexpr const char* kUsage =
    "usage: ampstudio-cli <command> [options]\n"
    "commands:\n"
    "  run      train from a JSON config and/or --preset NAME, writing metrics into --out DIR\n"
    "  bench    time the PyTorch AMP recipe in fp32, fp16 (emulated) and bf16\n"
    "  compare  run fp32, AMP fp16 and AMP bf16 with one seed and print one table\n"
    "  convert  show how values round to fp16 or bf16 (bit pattern, exact value, error, class)\n"
    "  export   export a run directory's metrics or charts\n"
    "  devices  list the CPU and the CUDA GPUs (or why none is usable)\n"
    "Run 'ampstudio-cli <command> --help' for a command's options.\n";

}  // namespace

int cliMain(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::map<std::string_view, int (*)(const Args&)> commands = {
      {"run", cmdRun},         {"bench", cmdBench},   {"compare", cmdCompare},
      {"convert", cmdConvert}, {"export", cmdExport},   {"devices", cmdDevices},
  };
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::fprintf(stderr, "ampstudio-cli: unknown command '%s' (try --help)\n", argv[1]);
    return 2;
  }
  Args args(argv + 2, argv + argc);
  try {
    return it->second(args);
  } catch (const std::exception& e) {
    // Library code throws errors a user can act on; the CLI prints them as one line.
    std::fprintf(stderr, "ampstudio-cli %s: %s\n", argv[1], e.what());
    return 1;
  }
}

}  // namespace amp::cli
