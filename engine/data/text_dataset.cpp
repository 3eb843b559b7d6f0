// Reading a text corpus and cutting it into byte windows. All checks happen before or while the
// bytes are read, so a wrong data.path fails in one line that names the file at fault.
#include "engine/data/text_dataset.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

namespace amp {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& where, const std::string& why) { throw DataError(where + ": " + why); }

std::string sizeText(std::int64_t bytes) {
  std::ostringstream os;
  os.precision(3);
  if (bytes >= (std::int64_t{1} << 30)) os << static_cast<double>(bytes) / (1 << 30) << " GiB";
  else if (bytes >= (1 << 20)) os << static_cast<double>(bytes) / (1 << 20) << " MiB";
  else os << bytes << " bytes";
  return os.str();
}

// The PyTorch peer's split point, int(len(data) * 0.9): the same double product and truncation.
std::int64_t trainingBytes(std::int64_t total) {
  return static_cast<std::int64_t>(static_cast<double>(total) * 0.9);
}

// Bytes that do not occur in text. Tab, newline, vertical tab, form feed and carriage return
// do; backspace too (fortune's files underline by overstriking), and escape (terminal colours).
bool isStrayControl(std::uint8_t b) {
  if (b == 0x7f) return true;
  if (b >= 0x20) return false;
  return b != '\t' && b != '\n' && b != '\v' && b != '\f' && b != '\r' && b != '\b' && b != 0x1b;
}

// What the message calls a file: its path as the user wrote it.
std::string shown(const fs::path& p) { return p.string(); }

// The size of a regular file, refusing anything else (a FIFO or /dev/zero would never end).
std::int64_t regularFileSize(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() == fs::file_type::not_found) {
    std::error_code linkEc;
    if (fs::is_symlink(fs::symlink_status(p, linkEc))) fail(shown(p), "a link to nothing (no such file)");
    fail(shown(p), "no such file or folder");
  }
  if (ec) fail(shown(p), "cannot read: " + ec.message());
  if (st.type() != fs::file_type::regular)
    fail(shown(p), "not a regular file (data.name=text reads a text file, or a folder of them)");
  const std::uintmax_t size = fs::file_size(p, ec);
  if (ec) fail(shown(p), "cannot read its size: " + ec.message());
  return static_cast<std::int64_t>(size);
}

void refuseTooLarge(const fs::path& p, std::int64_t bytes) {
  if (bytes > kMaxTextBytes)
    fail(shown(p), sizeText(bytes) + ", more than the " + sizeText(kMaxTextBytes) +
                       " data.name=text reads (is data.path the text corpus you meant?)");
}

// Appends the file's bytes to `out` and checks that they are text.
void appendFile(const fs::path& p, std::int64_t size, std::vector<std::uint8_t>& out) {
  errno = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(p.c_str(), "rb"), &std::fclose);
  if (!f) fail(shown(p), std::string("cannot open: ") + std::strerror(errno));
  const std::size_t before = out.size();
  out.resize(before + static_cast<std::size_t>(size));
  // A file that grows while it is read is cut at the size it had: the check against
  // kMaxTextBytes stays true. One that shrinks keeps what it still had.
  const std::size_t got = std::fread(out.data() + before, 1, static_cast<std::size_t>(size), f.get());
  if (std::ferror(f.get())) fail(shown(p), std::string("cannot read: ") + std::strerror(errno));
  out.resize(before + got);
  const std::string why = binaryReason(std::span<const std::uint8_t>(out.data() + before, got));
  if (!why.empty()) fail(shown(p), why + "; data.name=text reads plain text");
}

// The folder's corpus files in name order, each file once ("art.u8 -> art" in fortune's folder
// is a link to a file already read).
std::vector<fs::path> corpusFiles(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) fail(shown(dir), "cannot list the folder: " + ec.message());
  std::vector<fs::path> files;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) fail(shown(dir), "cannot list the folder: " + ec.message());
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.') continue;  // hidden: editor state, .git, ...
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, ".dat") == 0) continue;  // fortune's indexes
    std::error_code typeEc;
    if (!fs::is_regular_file(it->path(), typeEc)) continue;  // sub-folders, broken links, pipes
    files.push_back(it->path());
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
  std::vector<fs::path> unique;
  std::set<fs::path> seen;
  for (const fs::path& f : files) {
    std::error_code canonEc;
    const fs::path real = fs::canonical(f, canonEc);
    if (seen.insert(canonEc ? f : real).second) unique.push_back(f);
  }
  return unique;
}

// "fortunes" for /usr/share/games/fortunes/fortunes, "corpus" for corpus/ (a folder's trailing
// slash leaves an empty file name).
std::string baseName(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename()) p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() ? std::string("text") : name;
}

void refuseBadSequence(std::int64_t sequence) {
  if (sequence <= 0 || sequence > kMaxTextBytes)
    throw DataError("model.block = " + std::to_string(sequence) + ": token data needs a context from 1 to " +
                    std::to_string(kMaxTextBytes) + " bytes (each window holds model.block + 1)");
}

Dataset tokenDataset(std::vector<std::uint8_t> bytes, std::int64_t sequence, std::string name) {
  refuseBadSequence(sequence);
  if (static_cast<std::int64_t>(bytes.size()) < sequence + 1)
    throw DataError(name + ": " + std::to_string(bytes.size()) + " bytes, fewer than one window of model.block + 1 = " +
                    std::to_string(sequence + 1));
  Dataset d;
  d.name = std::move(name);
  d.sampleShape = {sequence};
  d.sequence = sequence;
  d.numClasses = kTokenVocabulary;
  d.tokens = std::move(bytes);
  return d;
}

}  // namespace

std::string binaryReason(std::span<const std::uint8_t> bytes) {
  std::size_t stray = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == 0) return "binary data (a NUL byte at offset " + std::to_string(i) + ")";
    stray += isStrayControl(bytes[i]) ? 1 : 0;
  }
  // Random bytes hold about 10% such control bytes; text hardly any.
  if (stray * 100 > bytes.size())
    return "binary data (" + std::to_string((stray * 100 + bytes.size() - 1) / bytes.size()) +
           "% of its bytes are control characters)";
  return {};
}

std::vector<std::uint8_t> readTextCorpus(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  std::vector<std::uint8_t> bytes;
  if (!fs::is_directory(p, ec)) {
    const std::int64_t size = regularFileSize(p);
    refuseTooLarge(p, size);
    if (size == 0) fail(path, "empty file");
    appendFile(p, size, bytes);
    if (bytes.empty()) fail(path, "empty file");
    return bytes;
  }
  const std::vector<fs::path> files = corpusFiles(p);
  if (files.empty())
    fail(path, "no text files in the folder (data.name=text reads its files in name order, skipping hidden "
               "ones, .dat indexes and sub-folders)");
  std::int64_t total = 0;
  std::vector<std::int64_t> sizes;
  for (const fs::path& f : files) {
    sizes.push_back(regularFileSize(f));
    total += sizes.back();
  }
  refuseTooLarge(p, total);
  bytes.reserve(static_cast<std::size_t>(total));
  for (std::size_t i = 0; i < files.size(); ++i) appendFile(files[i], sizes[i], bytes);
  if (bytes.empty()) fail(path, "its " + std::to_string(files.size()) + " text file(s) are empty");
  return bytes;
}

std::vector<std::int64_t> validationWindowStarts(std::int64_t length, std::int64_t sequence, std::int64_t count) {
  refuseBadSequence(sequence);
  if (length < sequence + 1)
    throw DataError("validation split of " + std::to_string(length) + " bytes: fewer than one window of " +
                    std::to_string(sequence + 1));
  if (count <= 0) return {};
  if (count == 1) return {0};  // torch.linspace with one step is its start
  // PyTorch's CPU linspace (RangeFactoriesKernel.cpp), in the tensor's dtype (float32): the
  // step (end - start) / (steps - 1), then start + step * i for the first half and end - step *
  // (steps - 1 - i) for the rest, so that both ends are exact. PyTorch's x86-64 (AVX2, AVX-512)
  // and arm64 kernels are compiled with FMA and the compiler's default contraction, which fuses
  // that last product and difference into one rounding: std::fma does the same here (this
  // project compiles with -ffp-contract=off, so nothing else is fused behind our back). With a
  // start of 0 the first half has no addition to fuse. .long() truncates toward zero.
  const float start = 0.0f;
  const float end = static_cast<float>(std::max<std::int64_t>(length - sequence - 2, 0));
  const float step = (end - start) / static_cast<float>(count - 1);
  const std::int64_t halfway = count / 2;
  std::vector<std::int64_t> starts(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = i < halfway ? start + step * static_cast<float>(i)
                                : std::fma(-step, static_cast<float>(count - 1 - i), end);
    starts[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(v);
  }
  return starts;
}

Dataset everyWindow(std::vector<std::uint8_t> bytes, std::int64_t sequence, std::string name) {
  Dataset d = tokenDataset(std::move(bytes), sequence, std::move(name));
  d.count = static_cast<std::int64_t>(d.tokens.size()) - sequence;
  return d;
}

Dataset validationWindows(std::vector<std::uint8_t> bytes, std::int64_t sequence, std::string name) {
  Dataset d = tokenDataset(std::move(bytes), sequence, std::move(name));
  d.windowStarts = validationWindowStarts(static_cast<std::int64_t>(d.tokens.size()), sequence);
  d.count = static_cast<std::int64_t>(d.windowStarts.size());
  return d;
}

std::int64_t minimumTextBytes(std::int64_t sequence) {
  refuseBadSequence(sequence);
  // The 10% split is about n / 10 bytes, so the answer lies just above 10 * sequence; both
  // splits only grow with n, so the first n that fits is the least.
  std::int64_t n = std::max<std::int64_t>(1, 10 * sequence - 20);
  while (trainingBytes(n) < sequence + 1 || n - trainingBytes(n) < sequence + 1) ++n;
  return n;
}

DataSplit loadTextDataset(const DataOptions& opt) {
  refuseBadSequence(opt.sequence);
  const std::string path = opt.path.empty() ? std::string(kDefaultTextCorpus) : opt.path;
  std::error_code ec;
  if (opt.path.empty() && !fs::exists(path, ec))
    fail(path, "no such file (the default corpus of data.name=text, from Debian's fortunes package: install "
               "it, or set data.path to a text file)");
  std::vector<std::uint8_t> bytes = readTextCorpus(path);
  const auto total = static_cast<std::int64_t>(bytes.size());
  const std::int64_t needed = minimumTextBytes(opt.sequence);
  if (total < needed)
    fail(path, std::to_string(total) + " bytes, too short: windows of model.block + 1 = " +
                   std::to_string(opt.sequence + 1) + " bytes in both the first 90% (training) and the last 10% "
                   "(validation) need at least " + std::to_string(needed) + " bytes");
  const std::int64_t split = trainingBytes(total);
  std::vector<std::uint8_t> validation(bytes.begin() + split, bytes.end());
  bytes.resize(static_cast<std::size_t>(split));
  const std::string base = baseName(path);
  return {everyWindow(std::move(bytes), opt.sequence, base + "/train"),
          validationWindows(std::move(validation), opt.sequence, base + "/test")};
}

}  // namespace amp
