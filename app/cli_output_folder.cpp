#include "app/cli_output_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "app/cli_experiment.h"  // UsageError
#include "app/cli_main.h"        // printError
#include "engine/core/checked_file.h"
#include "engine/io/config_json.h"  // format_version
#include "engine/io/run_record.h"  // the run files' names

#include <QJsonDocument>
#include <QJsonObject>

namespace amp::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kTraceFile = "trace.json";
constexpr const char* kCheckpointFolder = "checkpoints";

std::vector<std::string> ownFileNames() {
  std::vector<std::string> names(std::begin(kRunFiles), std::end(kRunFiles));
  names.push_back(kTraceFile);
  return names;
}

bool exists(const std::string& path, struct stat& st) { return ::lstat(path.c_str(), &st) == 0; }

// Checkpoints our writer made: step-<N>.zip (and nothing else in the folder is ours).
std::vector<fs::path> checkpointFiles(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  static const std::regex name(R"(step-[0-9]+\.zip)");
  for (fs::directory_iterator it(fs::path(dir) / kCheckpointFolder, ec), end; !ec && it != end; it.increment(ec))
    if (std::regex_match(it->path().filename().string(), name)) out.push_back(it->path());
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> existingRunOutputs(const std::string& dir) {
  std::vector<std::string> found;
  struct stat st {};
  for (const auto& name : ownFileNames())
    if (exists(dir + "/" + name, st)) found.push_back(name);
  if (!checkpointFiles(dir).empty()) found.push_back(std::string(kCheckpointFolder) + "/");
  return found;
}

void prepareOutputFolder(const OutputFolderPlan& plan) {
  const std::string& dir = plan.dir;
  makeFolders(dir);
  struct stat st {};
  // Something that is not a file where a run writes one fails only at the end otherwise
  // (summary.json), or at every checkpoint (a file named checkpoints).
  for (const auto& name : ownFileNames())
    if (exists(dir + "/" + name, st) && !S_ISREG(st.st_mode))
      throw OutputError(dir + "/" + name + ": exists and is not a file, so the run could not write it");
  const std::string checkpoints = dir + "/" + kCheckpointFolder;
  if (plan.checkpoints && ::stat(checkpoints.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw OutputError(checkpoints + ": exists and is not a folder, so no checkpoint could be written");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw OutputError(dir + ": cannot write there: " + systemReason(errno));

  if (plan.continuing) {
    // A resume rewrites the folder's config.json (as format_version 1) and metrics: a folder of
    // a newer format, which export and the app refuse to read, is refused here too, untouched.
    const std::string config = dir + "/" + kRunConfigFile;
    if (::stat(config.c_str(), &st) == 0) {
      const QJsonObject o = QJsonDocument::fromJson(readFileBytes(QString::fromStdString(config))).object();
      if (o.contains("format_version")) {
        RunConfig ignored;
        try {
          applyConfigJson(ignored, QJsonObject{{"format_version", o["format_version"]}});
        } catch (const ConfigError& e) {
          throw UsageError(config + ": " + e.what() + "; resume refused, the folder is left as it is");
        }
      }
    }
    return;
  }
  const auto found = existingRunOutputs(dir);
  if (found.empty()) return;
  if (!plan.overwrite)
    throw UsageError(dir + ": already holds a run (" + joined(found) +
                     "); choose another --out, or add --overwrite to replace it");
}

void replaceEarlierRun(const std::string& dir) {
  // Only what a run writes: other files the user keeps there stay.
  std::error_code ec;
  for (const auto& name : ownFileNames())
    if (fs::remove(fs::path(dir) / name, ec); ec)
      throw OutputError(dir + "/" + name + ": cannot remove it: " + ec.message());
  for (const auto& ckpt : checkpointFiles(dir))
    if (fs::remove(ckpt, ec); ec) throw OutputError(ckpt.string() + ": cannot remove it: " + ec.message());
}

FolderClaim::FolderClaim(const std::string& dir) : m_lockPath(dir + "/" + kFolderLockName) {
  makeFolders(dir);
  // Lock, then check that the file locked is still the one at the path: a run finishing just
  // then unlinks its lock file, and a lock on the unlinked file would claim nothing.
  for (int attempt = 0; attempt < 20; ++attempt) {
    m_fd = ::open(m_lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (m_fd < 0) throw OutputError(dir + ": cannot write there: " + systemReason(errno));
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(m_fd);
      m_fd = -1;
      if (err == EWOULDBLOCK)
        throw UsageError(dir + ": another run is writing there now; choose another --out");
      throw OutputError(m_lockPath + ": cannot lock it: " + systemReason(err));
    }
    struct stat held {}, now {};
    if (::fstat(m_fd, &held) == 0 && ::stat(m_lockPath.c_str(), &now) == 0 &&
        held.st_dev == now.st_dev && held.st_ino == now.st_ino)
      return;
    ::close(m_fd);
    m_fd = -1;
  }
  throw OutputError(m_lockPath + ": could not be claimed (it keeps changing)");
}

FolderClaim::~FolderClaim() {
  if (m_fd < 0) return;
  ::unlink(m_lockPath.c_str());  // while still locked: nobody holds a lock on a file still named
  ::close(m_fd);
}

std::string freshOutputFolder(const std::string& base) {
  // Any non-empty folder counts as taken: a preset's variants live in sub-folders, and a run
  // killed before its summary left only some of its files.
  auto taken = [](const std::string& d) {
    std::error_code ec;
    return fs::exists(d, ec) && (!fs::is_directory(d, ec) || !fs::is_empty(d, ec));
  };
  std::string dir = base;
  for (int n = 2; taken(dir); ++n) dir = base + "-" + std::to_string(n);
  return dir;
}

void refuseOwnInput(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (output.empty() || ::stat(output.c_str(), &out) != 0) return;  // a new file is no input
  auto same = [&](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino;
  };
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    bool clash = same(in);
    std::error_code ec;
    if (!clash && fs::is_directory(in, ec))
      for (auto it = fs::recursive_directory_iterator(in, ec); !clash && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (ec) break;
        if (it.depth() > 1) it.disable_recursion_pending();
        clash = same(it->path());
      }
    if (clash)
      throw OutputError(output + ": is an input of this command (" + in +
                        "); writing it would destroy what it reads: give another file");
  }
}

bool writeOutputFile(const std::string& command, const std::string& path, std::string_view bytes) {
  try {
    writeFileAtomically(path, bytes);
    return true;
  } catch (const OutputError& e) {
    printError(command, e.what());
    return false;
  }
}

}  // namespace amp::cli
