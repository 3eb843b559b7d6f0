#include "app/cli_main.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string_view>

#include "engine/config/config_schema.h"  // shownValue

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
    "Run 'ampstudio-cli <command> --help' for a command's options; --version prints the version.\n";

}  // namespace

void printError(const std::string& command, const std::string& what) {
  std::string line;
  for (unsigned char ch : what) {
    if (line.size() >= 2000) {
      line += "… (message cut)";
      break;
    }
    if (ch == '\n') line += "\\n";
    else if (ch < 0x20 || ch == 0x7f) line += ' ';
    else line += static_cast<char>(ch);
  }
  std::fprintf(stderr, "ampstudio-cli%s%s: %s\n", command.empty() ? "" : " ", command.c_str(), line.c_str());
}

namespace {
// Everything a command printed must have reached standard output: a full disk or a closed pipe
// there (`> /dev/full`) is a failed command, not a success (stdio reports it only at the flush).
int checkStandardOutput(const char* command, int rc) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
  const int err = errno;
  printError(command, std::string("cannot write to standard output: ") +
                          (err ? std::strerror(err) : "write error"));
  return rc == 0 ? 2 : rc;
}
}  // namespace

int cliMain(int argc, char** argv) {
  // A write past the file-size limit (ulimit -f) fails with EFBIG, which every writer reports
  // as an error naming the file, instead of SIGXFSZ killing the process mid-line.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("ampstudio-cli %s\n", AMP_PROJECT_VERSION_TEXT);
    return 0;
  }
  const std::map<std::string_view, int (*)(const Args&)> commands = {
      {"run", cmdRun},         {"bench", cmdBench},   {"compare", cmdCompare},
      {"convert", cmdConvert}, {"export", cmdExport},   {"devices", cmdDevices},
  };
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    printError("", "unknown command " + shownValue(argv[1]) + " (try --help)");
    return 2;
  }
  Args args(argv + 2, argv + argc);
  try {
    return checkStandardOutput(argv[1], it->second(args));
  } catch (const std::bad_alloc&) {
    printError(argv[1], "out of memory");
    return 2;
  } catch (const std::exception& e) {
    // Library code throws errors a user can act on (input that cannot be read, output that
    // cannot be written): one line, exit 2. Exit 1 means a run that failed (diverged).
    printError(argv[1], e.what());
    return 2;
  }
}

}  // namespace amp::cli
