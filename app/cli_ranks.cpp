#include "app/cli_ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <set>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <QDir>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryFile>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/dist/mpirun_command.h"
#include "engine/io/config_json.h"

#ifdef AMP_HAVE_MPI
#include <mpi.h>
#endif

namespace amp::cli {

namespace {

int envInt(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names)
    if (const char* v = std::getenv(n)) return std::atoi(v);
  return fallback;
}

#ifdef AMP_HAVE_MPI
// Open MPI's blocking collectives (which progress at Open MPI's own pace: polling MPI_Test with
// sleeps in between stalled a 12 MB all-reduce to 27 ms on 2 cores), watched by a thread of this
// rank: a collective still running after dist.timeout_s means another rank died or hangs, and
// waiting for ever is the one thing a run must not do, so the watchdog says which collective and
// ends this rank (mpirun then ends the others).
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);  // MPI from this thread only
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, std::size_t(len));
    m_library = v.substr(0, v.find(','));
    m_watchdog = std::thread([this] { watch(); });
  }
  ~MpiCommunicator() override {
    {
      std::lock_guard lock(m_mutex);
      m_quit = true;
    }
    m_wake.notify_all();
    m_watchdog.join();
    MPI_Finalize();
  }

  void setTimeout(double s) {
    std::lock_guard lock(m_mutex);
    m_timeoutS = s;
  }
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  double timeoutSeconds() const override {
    std::lock_guard lock(m_mutex);
    return m_timeoutS;
  }
  std::string description() const override {
    return m_library + ", " + std::to_string(m_size) + " ranks";
  }

  void allReduceSum(std::span<float> data, const char* what) override { reduce(data.data(), data.size(), MPI_FLOAT, 4, what); }
  void allReduceSum(std::span<double> data, const char* what) override { reduce(data.data(), data.size(), MPI_DOUBLE, 8, what); }

  void broadcast(std::span<std::uint8_t> data, int root, const char* what) override {
    Watched w(*this, what);
    for (std::size_t at = 0; at < data.size(); at += kChunk)
      MPI_Bcast(data.data() + at, int(std::min(kChunk, data.size() - at)), MPI_BYTE, root, MPI_COMM_WORLD);
  }

  std::vector<double> gatherToRoot(std::span<const double> values, const char* what) override {
    Watched w(*this, what);
    std::vector<double> all(m_rank == 0 ? values.size() * std::size_t(m_size) : 0);
    MPI_Gather(values.data(), int(values.size()), MPI_DOUBLE, all.data(), int(values.size()), MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    return all;
  }

 private:
  static constexpr std::size_t kChunk = std::size_t(1) << 28;  // elements per call (an int count)

  // The collective under way, for the watchdog (RAII: started and finished around each call).
  struct Watched {
    MpiCommunicator& c;
    Watched(MpiCommunicator& comm, const char* what) : c(comm) {
      {
        std::lock_guard lock(c.m_mutex);
        c.m_what = what;
        c.m_since = std::chrono::steady_clock::now();
        c.m_busy = true;
      }
      c.m_wake.notify_all();
    }
    ~Watched() {
      std::lock_guard lock(c.m_mutex);
      c.m_busy = false;
    }
  };

  void reduce(void* data, std::size_t n, MPI_Datatype type, std::size_t width, const char* what) {
    Watched w(*this, what);
    for (std::size_t at = 0; at < n; at += kChunk)
      MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(data) + at * width, int(std::min(kChunk, n - at)), type, MPI_SUM,
                    MPI_COMM_WORLD);
  }

  void watch() {
    std::unique_lock lock(m_mutex);
    while (!m_quit) {
      if (!m_busy) {
        m_wake.wait(lock, [this] { return m_quit || m_busy; });
        continue;
      }
      const auto since = m_since;
      const auto deadline = since + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(m_timeoutS));
      m_wake.wait_until(lock, deadline, [&] { return m_quit || !m_busy || m_since != since; });
      if (m_busy && m_since == since && std::chrono::steady_clock::now() >= deadline) {
        std::fprintf(stderr,
                     "ampstudio-cli run: rank %d: %s did not complete within %.0f s (dist.timeout_s): another "
                     "rank died or hangs; ending this rank (mpirun ends the others)\n",
                     m_rank, m_what, m_timeoutS);
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }

  int m_rank = 0, m_size = 1;
  std::string m_library;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_quit = false, m_busy = false;
  const char* m_what = "";
  std::chrono::steady_clock::time_point m_since{};
  double m_timeoutS = 300;
  std::thread m_watchdog;
};
#endif

}  // namespace

std::unique_ptr<Backend> rankBackend(const RunConfig& config) {
  if (launchedRanks() <= 1 || resolveBackendName(config.backend) != "cuda") return nullptr;
  const GpuInventory& inv = gpuInventory();
  if (!inv.usable() || inv.devices.empty()) return nullptr;  // the Trainer says why, as for one process
  const int local = envInt({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}, launchedRank());
  const int ordinal = inv.devices[std::size_t(local) % inv.devices.size()].ordinal;
  try {
    return makeBackend("cuda:" + std::to_string(ordinal), BackendOptions{config.tf32, config.reducedPrecisionReduction});
  } catch (const std::runtime_error& e) {
    throw ConfigError(std::string("backend: ") + e.what());
  }
}

int launchedRank() { return envInt({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, 0); }
int launchedRanks() { return envInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1); }

Communicator& processCommunicator(double timeoutS) {
#ifdef AMP_HAVE_MPI
  if (launchedRanks() > 1) {
    static std::unique_ptr<MpiCommunicator> mpi = std::make_unique<MpiCommunicator>();
    mpi->setTimeout(timeoutS);
    return *mpi;
  }
#endif
  (void)timeoutS;
  static SingleProcess single;
  return single;
}

namespace {

// mpirun, run as a child of this process rather than in its place, so that what the user sees is
// one line per problem and one of the documented exit codes: the ranks' lines go through (an
// error every rank reports alike, "rank K: WHAT" and "WHAT", once), Open MPI's own boxed
// explanations of a rank that failed are read for which rank ended how rather than shown, and a
// rank that died (a signal, or an exit code of its own) ends this command with exit 3 and one line
// naming the rank instead of mpirun's 128+signal.
pid_t g_mpirun = -1;

void forwardSignal(int sig) {
  if (g_mpirun > 0) ::kill(g_mpirun, sig);
}

bool isBoxRule(const std::string& line) { return line.size() >= 20 && line.find_first_not_of('-') == std::string::npos; }

struct MpirunReport {
  int rank = -1;     // the rank that ended the job, when Open MPI said which
  int signal = 0;    // ... on this signal
  int exitCode = 0;  // ... or with this exit code
};

// What Open MPI says about the rank that ended a job, in 4.x's words.
void readOpenMpiLine(const std::string& line, MpirunReport& r) {
  static const std::regex signalled(R"(process rank ([0-9]+) with PID .* exited on signal ([0-9]+))");
  static const std::regex named(R"(Process name: \[\[[0-9]+,[0-9]+\],([0-9]+)\])");
  static const std::regex exitCode(R"(Exit code: *([0-9]+))");
  std::smatch m;
  if (std::regex_search(line, m, signalled)) {
    r.rank = std::stoi(m[1]);
    r.signal = std::stoi(m[2]);
  } else if (std::regex_search(line, m, named)) {
    if (r.rank < 0) r.rank = std::stoi(m[1]);
  } else if (std::regex_search(line, m, exitCode)) {
    if (r.exitCode == 0) r.exitCode = std::stoi(m[1]);
  }
}

// Open MPI's boxes this command explains itself (a rank that failed); any other box (mpirun
// cannot start the ranks, ...) is shown as it is.
bool explainedBox(const std::string& text) {
  return text.find("Primary job") != std::string::npos ||
         text.find("exited on signal") != std::string::npos ||
         text.find("one or more processes exited with non-zero status") != std::string::npos;
}

int superviseMpirun(const std::vector<std::string>& argv, bool ranksChild, const std::vector<std::string>& alreadySaid = {}) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    printError("run", "--ranks: cannot make a pipe for mpirun: " + std::string(std::strerror(errno)));
    return 2;
  }
  std::vector<std::string> copy = argv;
  std::vector<char*> cargs;
  for (auto& a : copy) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    printError("run", "--ranks: cannot start mpirun: " + std::string(std::strerror(errno)));
    return 2;
  }
  if (pid == 0) {
    ::dup2(fds[1], 2);
    if (ranksChild) ::setenv("AMPSTUDIO_RANKS_CHILD", "1", 1);
    ::execv(cargs[0], cargs.data());
    const std::string msg = "ampstudio-cli run: --ranks: could not start " + argv[0] + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(2);
  }
  ::close(fds[1]);
  // Ctrl-C or a kill of this command reaches the ranks through mpirun, which ends them.
  g_mpirun = pid;
  struct sigaction sa {};
  sa.sa_handler = forwardSignal;
  sa.sa_flags = SA_RESTART;
  const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction before[3] {};
  for (int i = 0; i < 3; ++i) ::sigaction(forwarded[i], &sa, &before[i]);

  MpirunReport report;
  std::set<std::string> said(alreadySaid.begin(), alreadySaid.end());  // our lines shown, without "rank K: "
  std::vector<std::string> box;
  bool inBox = false;
  static const std::regex rankPrefix(R"(^(ampstudio-cli [a-z]+: )rank [0-9]+: )");
  FILE* in = ::fdopen(fds[0], "r");
  char* buf = nullptr;
  std::size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&buf, &cap, in)) >= 0) {
    std::string line(buf, std::size_t(n));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (isBoxRule(line)) {
      if (inBox) {
        std::string text;
        for (const auto& l : box) text += l + "\n";
        for (const auto& l : box) readOpenMpiLine(l, report);
        if (!explainedBox(text)) std::fprintf(stderr, "%s\n%s%s\n", line.c_str(), text.c_str(), line.c_str());
        box.clear();
      }
      inBox = !inBox;
      continue;
    }
    if (inBox) {
      box.push_back(line);
      continue;
    }
    if (line.find("exited on signal") != std::string::npos && line.rfind("mpirun noticed", 0) == 0) {
      readOpenMpiLine(line, report);
      continue;
    }
    if (line.rfind("ampstudio-cli", 0) == 0) {
      const std::string key = std::regex_replace(line, rankPrefix, "$1");
      if (!said.insert(key).second) continue;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }
  std::free(buf);
  std::fclose(in);
  for (const auto& l : box) std::fprintf(stderr, "%s\n", l.c_str());  // a box left open
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_mpirun = -1;
  for (int i = 0; i < 3; ++i) ::sigaction(forwarded[i], &before[i], nullptr);  // as they were
  if (WIFSIGNALED(status)) {
    printError("run", "mpirun ended on signal " + std::to_string(WTERMSIG(status)) + " (" +
                          strsignal(WTERMSIG(status)) + "), and the ranks with it");
    return 3;
  }
  const int code = WEXITSTATUS(status);
  if (code == 0 || code == 1 || code == 2) return code;
  // A rank died. Exit 3 from a rank is ours (dist.kill_rank, a collective past dist.timeout_s):
  // that rank has said why already.
  const int rankCode = report.exitCode ? report.exitCode : code;
  if (report.signal == 0 && rankCode == 3) return 3;
  const std::string who = report.rank >= 0 ? "rank " + std::to_string(report.rank) : "a rank";
  const int sig = report.signal ? report.signal : (code > 128 && code < 128 + 65 ? code - 128 : 0);
  printError("run", sig ? who + " was ended by signal " + std::to_string(sig) + " (" + strsignal(sig) +
                              "); mpirun stopped the other ranks, and the run folder keeps the whole steps rank 0 recorded"
                        : who + " ended with exit code " + std::to_string(rankCode) +
                              "; mpirun stopped the other ranks, and the run folder keeps the whole steps rank 0 recorded");
  return 3;
}

std::string selfPath() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  self[n] = '\0';
  return self;
}

}  // namespace

int runVariantOnRanks(const RunConfig& config, const std::string& dir, bool quiet) {
  const int ranks = config.dist.ranks;
  const std::string mpirun = findMpirun();
  if (mpirun.empty())
    throw std::runtime_error("dist.ranks=" + std::to_string(ranks) +
                             ": mpirun (Open MPI) is not installed: apt-get install openmpi-bin");
  const std::string self = selfPath();
  if (self.empty()) throw std::runtime_error("cannot find this program's own path (/proc/self/exe)");
  QTemporaryFile file(QDir::tempPath() + "/ampstudio-ranks-XXXXXX.json");
  if (!file.open() || file.write(QJsonDocument(configToJson(config)).toJson()) < 0 || !file.flush())
    throw std::runtime_error("cannot write the ranks' config to " + QDir::tempPath().toStdString());
  std::vector<std::string> argv = mpirunCommand(mpirun, ranks);
  // The child's own table and folder line would interleave with this run's: it stays quiet, and
  // this process says what it started.
  argv.insert(argv.end(), {self, "run", file.fileName().toStdString(), "--out", dir, "--quiet"});
  if (!quiet)
    std::fprintf(stderr, "[%s] %s on %d ranks through mpirun (Open MPI)...\n", config.displayName().c_str(), dir.c_str(), ranks);
  // AMPSTUDIO_RANKS_CHILD: no "outputs in" line of its own.
  const int code = superviseMpirun(argv, true);
  if (code != 0 && code != 1)
    throw std::runtime_error(std::to_string(ranks) + " ranks for " + dir + " ended with exit code " +
                             std::to_string(code) + " (their message is above)");
  return code;
}

int relaunchUnderMpirun(int ranks, const Args& runArgs, const std::vector<std::string>& alreadySaid) {
#ifndef AMP_HAVE_MPI
  (void)ranks;
  (void)runArgs;
  (void)alreadySaid;
  printError("run", "--ranks: this ampstudio-cli was built without Open MPI (libopenmpi-dev); rebuild with it, or run one process");
  return 2;
#else
  if (launchedRanks() > 1) {
    printError("run", "--ranks: already one of " + std::to_string(launchedRanks()) + " ranks started by mpirun; give one or the other");
    return 2;
  }
  const std::string mpirun = findMpirun();
  if (mpirun.empty()) {
    printError("run", "--ranks " + std::to_string(ranks) +
                          ": mpirun (Open MPI) is not installed: apt-get install openmpi-bin (or start the ranks with your own mpirun -np N ampstudio-cli run ...)");
    return 2;
  }
  const std::string self = selfPath();
  if (self.empty()) {
    printError("run", "--ranks: cannot find this program's own path (/proc/self/exe)");
    return 2;
  }
  std::vector<std::string> argv = mpirunCommand(mpirun, ranks);
  argv.push_back(self);
  argv.push_back("run");
  argv.insert(argv.end(), runArgs.begin(), runArgs.end());
  return superviseMpirun(argv, false, alreadySaid);
#endif
}

}  // namespace amp::cli
