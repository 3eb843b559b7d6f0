#include "engine/core/checked_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <type_traits>

namespace amp {

namespace {

[[noreturn]] void failWrite(const std::string& path, const std::string& what, int errnum) {
  throw OutputError(path + ": " + what + ": " + systemReason(errnum));
}

// The folder holding `path` ("." for a bare name), for fsync after a rename.
std::string folderOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all of `bytes`, retrying short writes and EINTR. Returns 0 or the errno that stopped it.
int writeAll(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // a regular file never accepts nothing; do not spin
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// An fsync on a folder makes a rename durable. Some file systems refuse it (EINVAL); the
// rename itself has happened then, so that is not a failure of the write.
void syncFolder(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string describeNonRegular(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "is a folder, not a file";
  if (S_ISFIFO(st.st_mode)) return "not a regular file (a pipe)";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "not a regular file (a device)";
  if (S_ISSOCK(st.st_mode)) return "not a regular file (a socket)";
  return "not a regular file";
}

}  // namespace

std::string systemReason(int errnum) {
  char buf[256];
  // GNU strerror_r returns the message (possibly not in buf); the XSI one fills buf.
  auto r = strerror_r(errnum, buf, sizeof buf);
  if constexpr (std::is_same_v<decltype(r), char*>) return r;
  else return r == 0 ? std::string(buf) : "error " + std::to_string(errnum);
}

std::optional<std::string> regularFileProblem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::string("no such file");
    return "cannot read: " + systemReason(errno);
  }
  if (!S_ISREG(st.st_mode)) return describeNonRegular(st);
  return std::nullopt;
}

std::optional<std::string> readRegularFile(const std::string& path, std::int64_t maxBytes,
                                           std::string& out) {
  out.clear();
  if (auto problem = regularFileProblem(path)) return path + ": " + *problem;
  // O_NONBLOCK: a FIFO swapped in after the check opens at once instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return path + ": cannot open: " + systemReason(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return path + ": cannot read: " + systemReason(errno);
  if (!S_ISREG(st.st_mode)) return path + ": " + describeNonRegular(st);
  const auto tooBig = [&](std::int64_t n) {
    return path + ": " + std::to_string(n) + " bytes, more than the " + std::to_string(maxBytes) +
           " this file may hold";
  };
  if (st.st_size > maxBytes) return tooBig(st.st_size);
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.clear();
      return path + ": cannot read: " + systemReason(errno);
    }
    if (n == 0) break;
    if (static_cast<std::int64_t>(out.size()) + n > maxBytes) {
      out.clear();
      return tooBig(maxBytes + 1) + " (it grew while being read)";
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return std::nullopt;
}

namespace {
// The file a replacement of `path` replaces. A symbolic link is followed (the link stays a link
// and the file it names is replaced); anything but a regular file (or nothing yet) is refused:
// a rename over a FIFO, device node or socket would turn it into a regular file (as root,
// /dev/null itself).
std::string replaceableTarget(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return path;  // nothing there yet
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, ec);
    if (ec) failWrite(path, "cannot follow the symbolic link", ec.value());
    target = resolved.string();
    if (::stat(target.c_str(), &st) != 0) return target;  // a link to a file yet to be made
  }
  // (A folder is left to the rename, whose "Is a directory" names it as before.)
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    throw OutputError(path + ": " + describeNonRegular(st) +
                      "; it would be replaced by a regular file (give the name of a file)");
  return target;
}
}  // namespace

AtomicFile::AtomicFile(std::string path) : m_path(replaceableTarget(path)) {
  // A name of our own beside the target: rename() is atomic only within one file system.
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; m_fd < 0; ++attempt) {
    m_tmp = m_path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    m_fd = ::open(m_tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (m_fd < 0 && (errno != EEXIST || attempt > 100)) failWrite(m_path, "cannot write", errno);
  }
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  if (!m_tmp.empty()) ::unlink(m_tmp.c_str());
  m_tmp.clear();
}

void AtomicFile::fail(const std::string& what, int errnum) {
  discard();
  failWrite(m_path, what, errnum);
}

void AtomicFile::write(std::string_view bytes) {
  if (const int err = writeAll(m_fd, bytes)) fail("cannot write", err);
}

void AtomicFile::commit() {
  // fsync before rename: otherwise a crash can leave the new name pointing at empty blocks
  // (the "0-byte summary.json" of a full or failing disk). Its error counts as a write error.
  if (::fsync(m_fd) != 0) fail("cannot write", errno);
  const int fd = m_fd;
  m_fd = -1;
  if (::close(fd) != 0) fail("cannot write", errno);
  if (::rename(m_tmp.c_str(), m_path.c_str()) != 0) fail("cannot replace it", errno);
  m_tmp.clear();
  syncFolder(folderOf(m_path));
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

void makeFolders(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return;
  // Walk down from the top so the message names the first part that is in the way.
  std::filesystem::path sofar;
  for (const auto& part : std::filesystem::path(dir)) {
    sofar /= part;
    struct stat st {};
    if (::stat(sofar.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        throw OutputError(sofar.string() + ": exists and is not a folder, so " + dir +
                          " cannot be made");
      continue;
    }
    if (::mkdir(sofar.c_str(), 0777) != 0 && errno != EEXIST)
      failWrite(sofar.string(), "cannot make the folder", errno);
  }
}

AppendOnlyFile::AppendOnlyFile(const std::string& path, bool truncate) : m_path(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw OutputError(path + ": " + describeNonRegular(st) + "; cannot write to it");
  m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0666);
  if (m_fd < 0) failWrite(path, "cannot write", errno);
  // Appends go at our own recorded end, not O_APPEND's: after a failed write we cut the file
  // back to that end, and the next record must start exactly there.
  const off_t end = ::lseek(m_fd, 0, SEEK_END);
  if (end < 0) {
    const int err = errno;
    ::close(m_fd);
    failWrite(path, "cannot write", err);
  }
  m_size = end;
}

AppendOnlyFile::~AppendOnlyFile() {
  if (m_fd >= 0) ::close(m_fd);
}

void AppendOnlyFile::append(std::string_view bytes) {
  if (bytes.empty()) return;
  int err = 0;
  if (::lseek(m_fd, static_cast<off_t>(m_size), SEEK_SET) < 0) err = errno;
  if (err == 0) err = writeAll(m_fd, bytes);
  if (err != 0) {
    // Half a record is worse than none: readers would take the cut line for a killed run's.
    if (::ftruncate(m_fd, static_cast<off_t>(m_size)) != 0) {
      // Leave the position where the next record must go; the truncate failure itself is
      // rare (the disk is failing) and the record was not written either way.
    }
    failWrite(m_path, "cannot write", err);
  }
  m_size += static_cast<std::int64_t>(bytes.size());
}

void AppendOnlyFile::sync() {
  if (::fdatasync(m_fd) != 0) failWrite(m_path, "cannot write", errno);
}

void checkOutputFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw OutputError(path + ": is a folder; give a file name to write");
  // A pipe, device or socket would be replaced by a regular file (as root, /dev/null itself):
  // refused before the work, as writeFileAtomically refuses it after.
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw OutputError(path + ": not a regular file (a pipe, device or socket); it would be "
                             "replaced by a regular file (give the name of a file)");
  const std::filesystem::path parentPath = std::filesystem::path(path).parent_path();
  const std::string parent = parentPath.empty() ? "." : parentPath.string();
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw OutputError(path + ": cannot write there: its folder " + parent + " does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw OutputError(path + ": cannot write there: " + systemReason(errno));
}

}  // namespace amp
