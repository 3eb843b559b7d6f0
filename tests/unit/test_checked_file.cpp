// The checked reader and writers (engine/core/checked_file): what reaches the disk on a failed
// write, what a pipe or device gets, and the messages. A real partial write comes from
// RLIMIT_FSIZE: the kernel writes up to the limit and then fails with EFBIG, as a full disk
// cuts a write short and then fails with ENOSPC (SIGXFSZ is ignored so the test lives on).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "engine/core/checked_file.h"
#include "tests/unit/test_support.h"

namespace amp {
namespace {

using test::ScratchDirTest;

std::string contents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Files written while this lives may grow to `bytes`; restored (and SIGXFSZ) on destruction.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &m_old);
    m_oldHandler = signal(SIGXFSZ, SIG_IGN);
    rlimit lim = m_old;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &m_old);
    signal(SIGXFSZ, m_oldHandler);
  }

 private:
  rlimit m_old{};
  sighandler_t m_oldHandler;
};

class CheckedFile : public ScratchDirTest {};

TEST_F(CheckedFile, ReaderRefusesWhatIsNotARegularFile) {
  std::string bytes;
  const std::string fifo = (m_dir / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A pipe with no writer: before, the read waited for one forever.
  EXPECT_HAS(readRegularFile(fifo, 1 << 20, bytes).value_or("(read)"), fifo + ": not a regular file (a pipe)");
  EXPECT_HAS(readRegularFile("/dev/zero", 1 << 20, bytes).value_or("(read)"), "/dev/zero: not a regular file (a device)");
  EXPECT_HAS(readRegularFile(m_dir.string(), 1 << 20, bytes).value_or("(read)"), "is a folder");
  EXPECT_HAS(readRegularFile((m_dir / "none").string(), 1 << 20, bytes).value_or("(read)"), "none: no such file");
  EXPECT_TRUE(bytes.empty());
}

TEST_F(CheckedFile, ReaderCapsWhatItReads) {
  put(m_dir / "f", std::string(1000, 'x'));
  std::string bytes;
  EXPECT_FALSE(readRegularFile((m_dir / "f").string(), 1000, bytes));
  EXPECT_EQ(bytes.size(), 1000u);
  EXPECT_HAS(readRegularFile((m_dir / "f").string(), 999, bytes).value_or("(read)"),
             "1000 bytes, more than the 999 this file may hold");
  EXPECT_TRUE(bytes.empty());
}

TEST_F(CheckedFile, AtomicWriteReplacesWholeOrNotAtAll) {
  const auto target = m_dir / "summary.json";
  writeFileAtomically(target.string(), "first");
  EXPECT_EQ(contents(target), "first");
  writeFileAtomically(target.string(), "second, longer");
  EXPECT_EQ(contents(target), "second, longer");
  {
    // The new bytes do not fit: the old file stays, no temporary file is left, and the
    // message names the file and the system's reason.
    FileSizeLimit limit(8);
    const std::string msg = test::messageOf<OutputError>([&] { writeFileAtomically(target.string(), std::string(100, 'y')); });
    EXPECT_HAS(msg, target.string() + ": cannot write: File too large");
  }
  EXPECT_EQ(contents(target), "second, longer");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(m_dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(CheckedFile, AtomicWriteOverAFolderNamesIt) {
  std::filesystem::create_directory(m_dir / "summary.json");
  EXPECT_HAS(test::messageOf<OutputError>([&] { writeFileAtomically((m_dir / "summary.json").string(), "x"); }),
             "summary.json: cannot replace it: Is a directory");
}

TEST_F(CheckedFile, AppendIsWholeLinesOnly) {
  const auto path = m_dir / "metrics.jsonl";
  {
    AppendOnlyFile f(path.string(), true);
    f.append("{\"step\":1}\n");  // 11 bytes
    FileSizeLimit limit(30);
    f.append("{\"step\":2}\n");  // 22
    // 11 more would make 33: the kernel writes 8 of them and refuses the rest. The cut line
    // must not stay: a reader would take it for a run killed mid-write.
    EXPECT_HAS(test::messageOf<OutputError>([&] { f.append("{\"step\":3}\n"); }),
               "metrics.jsonl: cannot write: File too large");
    EXPECT_EQ(contents(path), "{\"step\":1}\n{\"step\":2}\n");
    // A shorter record that fits goes right after the last whole one.
    f.append("{\"s\":3}\n");
  }
  EXPECT_EQ(contents(path), "{\"step\":1}\n{\"step\":2}\n{\"s\":3}\n");
  AppendOnlyFile again(path.string(), false);  // a resumed run continues at the end
  again.append("{\"s\":4}\n");
  EXPECT_EQ(contents(path), "{\"step\":1}\n{\"step\":2}\n{\"s\":3}\n{\"s\":4}\n");
}

TEST_F(CheckedFile, AppendRefusesPipesAndFolders) {
  const std::string fifo = (m_dir / "events.log").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_HAS(test::messageOf<OutputError>([&] { AppendOnlyFile f(fifo, false); }), "not a regular file (a pipe)");
}

TEST_F(CheckedFile, FoldersNameWhatIsInTheWay) {
  put(m_dir / "file", "x");
  EXPECT_HAS(test::messageOf<OutputError>([&] { makeFolders((m_dir / "file" / "sub").string()); }),
             "file: exists and is not a folder");
  makeFolders((m_dir / "a" / "b").string());
  EXPECT_TRUE(std::filesystem::is_directory(m_dir / "a" / "b"));
}

}  // namespace
}  // namespace amp
