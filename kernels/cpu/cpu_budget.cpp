#include "kernels/cpu/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace amp::cpu {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// A whole non-negative integer, or -1.
long long parseCount(std::string_view s) {
  s = trim(s);
  long long v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return -1;
  return v;
}

std::string readSmallFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int affinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? int(online) : 1;
}

// The smallest quota on the way from this process's cgroup up to the root (a parent's limit
// binds its children), or 0 for none. /proc/self/cgroup names the cgroup: "0::/user.slice/x" on
// v2, "4:cpu,cpuacct:/docker/…" on v1; inside a container the path may not exist under
// /sys/fs/cgroup (its root is the container's), so the root's own file is read last.
double cgroupQuotaCpus() {
  std::istringstream lines(readSmallFile("/proc/self/cgroup"));
  std::string line;
  double best = 0;
  auto consider = [&](double q) {
    if (q > 0 && (best == 0 || q < best)) best = q;
  };
  while (std::getline(lines, line)) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    const bool v2 = controllers.empty();
    std::string root;
    if (v2) {
      root = "/sys/fs/cgroup";
    } else {
      std::istringstream names(controllers);
      std::string name;
      bool cpu = false;
      while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
      if (!cpu) continue;
      root = "/sys/fs/cgroup/" + controllers;
      if (access(root.c_str(), F_OK) != 0) root = "/sys/fs/cgroup/cpu";
    }
    for (;;) {
      const std::string dir = root + (path == "/" ? "" : path);
      if (v2)
        consider(cpuQuotaFromCpuMax(readSmallFile(dir + "/cpu.max")));
      else
        consider(cpuQuotaFromCfs(readSmallFile(dir + "/cpu.cfs_quota_us"),
                                 readSmallFile(dir + "/cpu.cfs_period_us")));
      if (path.empty() || path == "/") break;
      const auto slash = path.rfind('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  }
  return best;
}

}  // namespace

double cpuQuotaFromCpuMax(std::string_view text) {
  text = trim(text);
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return 0;
  const long long quota = parseCount(text.substr(0, space)), period = parseCount(text.substr(space + 1));
  if (quota <= 0 || period <= 0) return 0;  // "max" (no limit) or not understood
  return double(quota) / double(period);
}

double cpuQuotaFromCfs(std::string_view quotaText, std::string_view periodText) {
  const long long quota = parseCount(quotaText), period = parseCount(periodText);
  if (quota <= 0 || period <= 0) return 0;  // "-1" = no limit
  return double(quota) / double(period);
}

int usableCpus(int affinityCpus, double quotaCpus, int ompNumThreads) {
  int n = std::max(1, affinityCpus);
  if (quotaCpus > 0) n = std::min(n, std::max(1, int(std::ceil(quotaCpus - 1e-9))));
  if (ompNumThreads > 0) n = std::min(n, ompNumThreads);
  return n;
}

int ompNumThreadsFromEnv(const char* value) {
  if (!value) return 0;
  std::string_view s(value);
  if (const auto comma = s.find(','); comma != std::string_view::npos) s = s.substr(0, comma);
  const long long n = parseCount(s);
  return n > 0 && n < (1 << 20) ? int(n) : 0;
}

int availableCpus() {
  static const int cached =
      usableCpus(affinityCpus(), cgroupQuotaCpus(), ompNumThreadsFromEnv(std::getenv("OMP_NUM_THREADS")));
  return cached;
}

int threadsPerRun(int available, int sharers) {
  return std::max(1, std::max(1, available) / std::max(1, sharers));
}

}  // namespace amp::cpu
