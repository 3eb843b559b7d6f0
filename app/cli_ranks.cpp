#include "app/cli_ranks.h"

#include <unistd.h>

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
  QProcess proc;
  proc.setProgram(QString::fromStdString(argv[0]));
  QStringList args;
  for (std::size_t i = 1; i < argv.size(); ++i) args << QString::fromStdString(argv[i]);
  proc.setArguments(args);
  proc.setProcessChannelMode(QProcess::ForwardedChannels);
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("AMPSTUDIO_RANKS_CHILD"), QStringLiteral("1"));  // no "outputs in" line of its own
  proc.setProcessEnvironment(env);
  proc.start();
  if (!proc.waitForStarted(10000)) throw std::runtime_error("could not start " + mpirun);
  proc.waitForFinished(-1);
  const int code = proc.exitStatus() == QProcess::NormalExit ? proc.exitCode() : -1;
  if (code != 0 && code != 1)
    throw std::runtime_error(std::to_string(ranks) + " ranks for " + dir + " ended with exit code " +
                             std::to_string(code) + " (their message is above)");
  return code;
}

int relaunchUnderMpirun(int ranks, const Args& runArgs) {
#ifndef AMP_HAVE_MPI
  (void)ranks;
  (void)runArgs;
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
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(mpirun.c_str(), cargs.data());
  printError("run", "--ranks: could not start " + mpirun);
  return 2;
#endif
}

}  // namespace amp::cli
