#include "engine/dist/mpirun_command.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace amp {

std::string findMpirun() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream s(path);
    for (std::string d; std::getline(s, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  dirs.insert(dirs.end(), {"/usr/bin", "/usr/local/bin"});
  for (const std::string& d : dirs)
    if (::access((d + "/mpirun").c_str(), X_OK) == 0) return d + "/mpirun";
  return {};
}

std::vector<std::string> mpirunCommand(const std::string& mpirun, int ranks) {
  std::vector<std::string> argv{mpirun, "-np", std::to_string(ranks), "--oversubscribe"};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  return argv;
}

}  // namespace amp
