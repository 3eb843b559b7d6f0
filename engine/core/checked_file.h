// The one place where AMP Studio touches files byte by byte: a reader that refuses anything but
// a regular file and caps what it reads, and two writers that check every write.
//
// Why: a FIFO given as a config or run file blocked a read forever, /dev/zero filled memory,
// and on a full disk a run said "outputs in ..." while metrics.jsonl ended mid-line and
// summary.json was committed empty. Every problem here becomes an exception whose message is
// "PATH: what went wrong: the system's reason" (strerror, e.g. "No space left on device").
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace amp {

// A file that could not be written (or a folder that could not be made). Callers report it as
// one line; the CLI exits 2, since the fix is the user's (a path, a permission, disk space).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why `path` cannot be read as a data file, or nothing when it is a regular file: "no such
// file", "is a folder", "not a regular file (a device, pipe or socket)". Symbolic links are
// followed. Readers that open files their own way (zlib, QuaZip) ask this first.
std::optional<std::string> regularFileProblem(const std::string& path);

// The whole of a regular file, at most `maxBytes` of it. Returns the problem ("PATH: ...") and
// leaves `out` empty when the path is not a regular file, cannot be opened or read, or holds
// more than `maxBytes` (checked before reading, and again while reading, for files that grow).
// Opened with O_NONBLOCK, so even a FIFO that slipped past the check cannot block.
std::optional<std::string> readRegularFile(const std::string& path, std::int64_t maxBytes,
                                           std::string& out);

// Replaces `path` with `bytes`, or leaves it as it was: the bytes go to a temporary file in the
// same folder, every write is checked, the file is fsync'ed, then renamed over `path`, and the
// folder is fsync'ed so the rename survives a power cut. Throws OutputError.
void writeFileAtomically(const std::string& path, std::string_view bytes);

// The machinery behind writeFileAtomically, for writers that produce a file in parts (a zip):
// a temporary file beside `path` that becomes `path` only on commit(). Destroyed without a
// commit, it removes the temporary file and `path` stays as it was.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // throws OutputError
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);  // throws OutputError
  // For writers that need the descriptor (seeking, their own writes): they report errors with
  // fail() so the message carries the system's reason.
  int fd() const { return m_fd; }
  [[noreturn]] void fail(const std::string& what, int errnum);
  // fsync, close, rename over `path`, fsync the folder. Throws OutputError (path unchanged).
  void commit();
  const std::string& path() const { return m_path; }

 private:
  void discard();
  std::string m_path, m_tmp;
  int m_fd = -1;
};

// Checks, before the work that produces it, that a single output file (the CLI's --json and
// --output, the app's --screenshot) can be written: its folder exists and is writable, and the
// path is not a folder, pipe, device or socket (writeFileAtomically refuses those too, but only
// after the work). Throws OutputError naming the path.
void checkOutputFile(const std::string& path);

// Creates `dir` and its parents; throws OutputError naming the first part that is not a
// folder or cannot be made ("out/summary.json: exists and is not a folder").
void makeFolders(const std::string& dir);

// A file written a record at a time (metrics.jsonl, events.log). Each append() is all or
// nothing: a write that fails part-way (ENOSPC, EFBIG, EIO) is cut back to the end of the
// previous record before OutputError is thrown, so a reader never meets half a line.
class AppendOnlyFile {
 public:
  // truncate=false continues the file (a resumed run); true starts it empty.
  AppendOnlyFile(const std::string& path, bool truncate);
  ~AppendOnlyFile();
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;

  void append(std::string_view bytes);
  // fdatasync: what was appended is on the disk (called at checkpoints and at the end).
  void sync();
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  int m_fd = -1;
  std::int64_t m_size = 0;  // the end of the last whole record
};

// "No space left on device": strerror for an errno value, thread-safe.
std::string systemReason(int errnum);

}  // namespace amp
