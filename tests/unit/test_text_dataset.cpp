// data.name=text and the sequence tasks: the 90/10 byte split, the peer's float32 validation
// offsets, token batches (labels = inputs shifted by one), one-line errors naming the file, and
// the generated tasks parsed back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "engine/config/config_schema.h"
#include "engine/config/run_config.h"
#include "engine/data/batch_loader.h"
#include "engine/data/data_fingerprint.h"
#include "engine/data/dataset.h"
#include "engine/data/sequence_tasks.h"
#include "engine/data/text_dataset.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace amp;

namespace {

const auto errorOf = test::messageOf<DataError>;

std::vector<std::uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

// Readable text of exactly n bytes whose windows differ from one another ("0042 ..." lines).
std::string sampleText(std::size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += std::to_string(1000 + i) + " the quick brown fox\n";
  s.resize(n);
  return s;
}

class TextDataTest : public test::ScratchDirTest {
 protected:
  std::string write(const std::string& name, const std::string& content) {
    const fs::path p = m_dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  static DataOptions textOptions(const std::string& path, std::int64_t sequence) {
    DataOptions o;
    o.name = "text";
    o.path = path;
    o.sequence = sequence;
    o.seed = 5;
    return o;
  }
};

// Every batch of one epoch, inputs and labels together, checked against the data's bytes.
std::vector<std::vector<std::int32_t>> epochOf(BatchLoader& loader, const Dataset& d) {
  std::vector<std::vector<std::int32_t>> out;
  Batch b;
  while (loader.next(b)) {
    const auto t = static_cast<std::size_t>(d.sequence);
    EXPECT_EQ(b.xShape, (Shape{b.size, d.sequence}));
    EXPECT_TRUE(b.x.empty());
    EXPECT_EQ(b.tokens.size(), static_cast<std::size_t>(b.size) * t);
    EXPECT_EQ(b.labels.size(), static_cast<std::size_t>(b.size) * t);
    for (std::int64_t i = 0; i < b.size; ++i) {
      const std::int64_t start = d.windowStart(b.rows[static_cast<std::size_t>(i)]);
      for (std::size_t p = 0; p < t; ++p) {
        EXPECT_EQ(b.tokens[i * t + p], d.tokens[start + p]);
        EXPECT_EQ(b.labels[i * t + p], d.tokens[start + p + 1]);
      }
    }
    std::vector<std::int32_t> both = b.tokens;
    both.insert(both.end(), b.labels.begin(), b.labels.end());
    out.push_back(both);
  }
  return out;
}

TEST_F(TextDataTest, FirstNinetyPercentTrainsLastTenValidates) {
  const std::string text = sampleText(1000);
  const DataSplit s = loadTextDataset(textOptions(write("corpus.txt", text), 8));
  EXPECT_EQ(s.train.tokens, bytesOf(text.substr(0, 900)));
  EXPECT_EQ(s.test.tokens, bytesOf(text.substr(900)));
  // Every offset whose 9-byte window fits: 900 - 8.
  EXPECT_EQ(s.train.count, 892);
  EXPECT_TRUE(s.train.windowStarts.empty());
  EXPECT_EQ(s.test.count, kValidationWindows);
  EXPECT_EQ(s.test.windowStarts, validationWindowStarts(100, 8));
  for (const Dataset* d : {&s.train, &s.test}) {
    EXPECT_TRUE(d->isTokenData());
    EXPECT_EQ(d->sequence, 8);
    EXPECT_EQ(d->sampleShape, (Shape{8}));
    EXPECT_EQ(d->numClasses, 256);
    EXPECT_TRUE(d->features.empty());
    EXPECT_TRUE(d->labels.empty());
  }
  EXPECT_EQ(s.train.name, "corpus.txt/train");
  EXPECT_EQ(s.test.name, "corpus.txt/test");
  // int(len * 0.9) truncates: 1009 bytes split at 908.
  const DataSplit odd = loadTextDataset(textOptions(write("odd.txt", sampleText(1009)), 8));
  EXPECT_EQ(odd.train.tokens.size(), 908u);
  EXPECT_EQ(odd.test.tokens.size(), 101u);
}

TEST(TextValidation, StartsAreTorchFloat32LinspaceTruncated) {
  // Worked out by hand in float32 (Python struct rounding): linspace(0, 279, 64). Exact
  // arithmetic would give 31 at index 7 (7 * 279 / 63 = 31); float32's step 4.4285712 times 7
  // rounds to 30.999998, which .long() truncates to 30. The peer evaluates that window.
  const std::vector<std::int64_t> expected = {
      0,   4,   8,   13,  17,  22,  26,  30,  35,  39,  44,  48,  53,  57,  61,  66,  70,  75,  79,  84,  88,  92,
      97,  101, 106, 110, 115, 119, 123, 128, 132, 137, 141, 146, 150, 155, 159, 163, 168, 172, 177, 181, 186, 190,
      194, 199, 203, 208, 212, 217, 221, 225, 230, 234, 239, 243, 248, 252, 256, 261, 265, 270, 274, 279};
  EXPECT_EQ(validationWindowStarts(279 + 16 + 2, 16), expected);
  // The second half is end - step * (63 - i) in one rounding (PyTorch's FMA-built kernels): an
  // unfused product would give 139291 at index 34 of linspace(0, 258098, 64).
  const auto big = validationWindowStarts(258098 + 128 + 2, 128);
  EXPECT_EQ(std::vector<std::int64_t>(big.begin() + 30, big.begin() + 40),
            (std::vector<std::int64_t>{122903, 127000, 131097, 135194, 139290, 143387, 147484, 151581, 155678,
                                       159774}));
}

TEST(TextValidation, ShortSplitsRepeatWindowsButStayInRange) {
  // length - sequence - 2 = -1: the peer's range would reach offset -1; ours stays at 0.
  EXPECT_EQ(validationWindowStarts(17, 16), std::vector<std::int64_t>(64, 0));
  for (std::int64_t length = 17; length < 300; ++length) {
    const auto starts = validationWindowStarts(length, 16);
    ASSERT_EQ(starts.size(), 64u);
    EXPECT_EQ(starts.front(), 0);
    for (const std::int64_t s : starts) {
      EXPECT_GE(s, 0);
      EXPECT_LE(s + 16 + 1, length) << "length " << length;
    }
    if (length >= 16 + 2) {
      EXPECT_EQ(starts.back(), length - 16 - 2);
    }
  }
  EXPECT_THROW(validationWindowStarts(16, 16), DataError);
}

TEST_F(TextDataTest, LoaderBatchesAreWindowsWithLabelsShiftedByOne) {
  const std::string text = sampleText(2000);
  const DataSplit s = loadTextDataset(textOptions(write("c.txt", text), 16));
  BatchLoader loader(s.train, {.batchSize = 7, .seed = 3});
  Batch b;
  ASSERT_TRUE(loader.next(b));
  ASSERT_EQ(b.size, 7);
  for (std::size_t i = 0; i < 7; ++i) {
    const std::int64_t start = b.rows[i];  // training windows start at their index
    for (std::size_t p = 0; p < 16; ++p) {
      EXPECT_EQ(b.tokens[i * 16 + p], static_cast<unsigned char>(text[start + p]));
      EXPECT_EQ(b.labels[i * 16 + p], static_cast<unsigned char>(text[start + p + 1]));
      if (p + 1 < 16) {
        EXPECT_EQ(b.labels[i * 16 + p], b.tokens[i * 16 + p + 1]);
      }
    }
  }
  // A whole epoch visits every window once.
  loader.reset(0);
  std::set<std::int64_t> seen;
  while (loader.next(b)) seen.insert(b.rows.begin(), b.rows.end());
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), s.train.count);
  // The test windows, in order, at the validation offsets of the last 10%.
  BatchLoader eval(s.test, {.batchSize = 64, .shuffle = false});
  ASSERT_TRUE(eval.next(b));
  ASSERT_EQ(b.size, 64);
  const std::size_t at = s.test.windowStarts[5];
  EXPECT_EQ(b.tokens[5 * 16], static_cast<unsigned char>(text[1800 + at]));
  EXPECT_EQ(b.labels[5 * 16 + 15], static_cast<unsigned char>(text[1800 + at + 16]));
  epochOf(eval, s.test);
}

TEST_F(TextDataTest, LoaderIsDeterministicAndRestores) {
  const DataSplit s = loadTextDataset(textOptions(write("c.txt", sampleText(3000)), 12));
  BatchLoader a(s.train, {.batchSize = 32, .seed = 9}), b(s.train, {.batchSize = 32, .seed = 9}),
      other(s.train, {.batchSize = 32, .seed = 10});
  const auto epochA = epochOf(a, s.train);
  EXPECT_EQ(epochA, epochOf(b, s.train));
  EXPECT_NE(epochA, epochOf(other, s.train));

  BatchLoader original(s.train, {.batchSize = 32, .seed = 9});
  Batch batch;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(original.next(batch));
  const BatchLoaderState saved = original.state();
  std::vector<std::vector<std::int32_t>> next;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(original.next(batch));
    next.push_back(batch.tokens);
    next.push_back(batch.labels);
  }
  BatchLoader resumed(s.train, {.batchSize = 32, .seed = 9});
  resumed.restore(saved);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(resumed.next(batch));
    EXPECT_EQ(batch.tokens, next[2 * i]);
    EXPECT_EQ(batch.labels, next[2 * i + 1]);
  }
}

TEST_F(TextDataTest, TokenBatchesMustCarryTheirData) {
  const DataSplit s = loadTextDataset(textOptions(write("c.txt", sampleText(1000)), 8));
  EXPECT_HAS(errorOf([&] { BatchLoader(s.train, {.batchSize = 4, .copyData = false}); }), "c.txt/train");
  // A hand-made Dataset naming a window beyond its bytes is refused, not read out of bounds.
  Dataset bad = s.test;
  bad.windowStarts[3] = static_cast<std::int64_t>(bad.tokens.size()) - 8;
  EXPECT_HAS(errorOf([&] { BatchLoader(bad, {.batchSize = 4}); }), "does not fit");
}

TEST_F(TextDataTest, ErrorsNameTheFile) {
  const std::string missing = (m_dir / "missing.txt").string();
  EXPECT_EQ(errorOf([&] { loadTextDataset(textOptions(missing, 8)); }), missing + ": no such file or folder");
  // Through loadDataset the key that chose the file comes first.
  EXPECT_EQ(errorOf([&] { loadDataset(textOptions(missing, 8)); }),
            "data.path: " + missing + ": no such file or folder");

  const std::string empty = write("empty.txt", "");
  EXPECT_EQ(errorOf([&] { loadTextDataset(textOptions(empty, 8)); }), empty + ": empty file");

  // 9-byte windows in both splits: 81 bytes (72 + 9) are the least that will do.
  EXPECT_EQ(minimumTextBytes(8), 81);
  const std::string shortFile = write("short.txt", sampleText(80));
  EXPECT_EQ(errorOf([&] { loadTextDataset(textOptions(shortFile, 8)); }),
            shortFile + ": 80 bytes, too short: windows of model.block + 1 = 9 bytes in both the first 90% (training) "
                        "and the last 10% (validation) need at least 81 bytes");
  EXPECT_NO_THROW(loadTextDataset(textOptions(write("enough.txt", sampleText(81)), 8)));

  std::string withNul = sampleText(500);
  withNul[123] = '\0';
  const std::string nul = write("nul.bin", withNul);
  EXPECT_EQ(errorOf([&] { loadTextDataset(textOptions(nul, 8)); }),
            nul + ": binary data (a NUL byte at offset 123); data.name=text reads plain text");
  std::string noisy = sampleText(500);
  for (int i = 0; i < 500; i += 20) noisy[i] = '\x01';
  const std::string ctl = write("ctl.bin", noisy);
  EXPECT_HAS(errorOf([&] { loadTextDataset(textOptions(ctl, 8)); }), ctl + ": binary data (5% of its bytes");

  fs::create_directories(m_dir / "nothing" / "sub");
  write("nothing/index.dat", sampleText(500));
  write("nothing/.hidden", sampleText(500));
  write("nothing/sub/inner.txt", sampleText(500));
  const std::string nothing = (m_dir / "nothing").string();
  EXPECT_HAS(errorOf([&] { loadTextDataset(textOptions(nothing, 8)); }), nothing + ": no text files in the folder");

  EXPECT_HAS(errorOf([&] { loadTextDataset(textOptions("/dev/null", 8)); }), "/dev/null: not a regular file");
  EXPECT_HAS(errorOf([&] { loadTextDataset(textOptions(write("ok.txt", sampleText(500)), 0)); }), "model.block = 0");

  if (::geteuid() != 0) {  // root reads anything
    const std::string locked = write("locked.txt", sampleText(500));
    fs::permissions(locked, fs::perms::none);
    EXPECT_EQ(errorOf([&] { loadTextDataset(textOptions(locked, 8)); }), locked + ": cannot open: Permission denied");
  }
}

TEST_F(TextDataTest, FolderConcatenatesTextFilesInNameOrder) {
  const std::string a = sampleText(300), b = "second file\n" + sampleText(400), c = sampleText(200);
  write("dir/b.txt", b);
  write("dir/a", a);
  write("dir/c", c);
  write("dir/a.dat", std::string("\0\0\0\x02\0\0\0\x10", 8));  // fortune's binary index: skipped
  write("dir/.notes", "hidden");
  write("dir/sub/x.txt", "a sub-folder is not read");
  fs::create_symlink(m_dir / "dir" / "a", m_dir / "dir" / "a.u8");  // fortune's link: read once
  EXPECT_EQ(readTextCorpus((m_dir / "dir").string()), bytesOf(a + b + c));
  // A binary file in the folder is named itself.
  write("dir/d.png", std::string("\x89PNG\r\n\x1a\n\0\0", 10));
  EXPECT_HAS(errorOf([&] { readTextCorpus((m_dir / "dir").string()); }),
             (m_dir / "dir" / "d.png").string() + ": binary");
  // Empty files only.
  write("empties/one", "");
  write("empties/two", "");
  EXPECT_EQ(errorOf([&] { readTextCorpus((m_dir / "empties").string()); }),
            (m_dir / "empties").string() + ": its 2 text file(s) are empty");
}

TEST_F(TextDataTest, Utf8AndOverstrikesAreText) {
  std::string s;
  // Backspaces underline by overstriking (as fortune's files do); escapes colour a terminal.
  while (s.size() < 2000)
    s += "Grüße, naïve café ✓ — _\b_u\bun\bnd\bde\ber\brl\bli\bin\bne\bed\bd\n\ttab\x1b[1mbold\x1b[0m\r\n";
  EXPECT_EQ(binaryReason(bytesOf(s)), "");
  const DataSplit split = loadTextDataset(textOptions(write("utf8.txt", s), 32));
  EXPECT_EQ(split.train.tokens.size() + split.test.tokens.size(), s.size());
}

TEST_F(TextDataTest, FingerprintSeesEveryTokenAndWindow) {
  const DataSplit s = loadTextDataset(textOptions(write("c.txt", sampleText(1000)), 8));
  const std::string base = dataFingerprint(s);
  DataSplit changed = s;
  changed.train.tokens[500] ^= 1;
  EXPECT_NE(dataFingerprint(changed), base);
  changed = s;
  changed.test.tokens[3] ^= 0x20;
  EXPECT_NE(dataFingerprint(changed), base);
  changed = s;
  changed.test.windowStarts[10] += 1;
  EXPECT_NE(dataFingerprint(changed), base);
  EXPECT_EQ(dataFingerprint(loadTextDataset(textOptions(write("same.txt", sampleText(1000)), 8))), base);
}

TEST_F(TextDataTest, SubsetPicksWindows) {
  DataOptions o = textOptions(write("c.txt", sampleText(2000)), 16);
  o.subset = 50;
  o.testSubset = 10;
  const DataSplit full = loadDataset(textOptions(o.path, 16));
  const DataSplit s = loadDataset(o);
  EXPECT_EQ(s.train.count, 50);
  ASSERT_EQ(s.train.windowStarts.size(), 50u);
  EXPECT_EQ(s.train.tokens, full.train.tokens);
  EXPECT_EQ(s.test.count, 10);
  std::set<std::int64_t> valid(full.test.windowStarts.begin(), full.test.windowStarts.end());
  for (const std::int64_t w : s.test.windowStarts) EXPECT_TRUE(valid.count(w)) << w;
  BatchLoader loader(s.train, {.batchSize = 8, .seed = 1});
  EXPECT_EQ(epochOf(loader, s.train).size(), 7u);
}

TEST(TextDefaultCorpus, FortunesPackage) {
  if (!fs::exists(kDefaultTextCorpus)) GTEST_SKIP() << kDefaultTextCorpus << " missing (Debian's fortunes package)";
  DataOptions o;
  o.name = "text";
  o.sequence = 128;
  const DataSplit s = loadDataset(o);
  const auto total = static_cast<std::int64_t>(fs::file_size(kDefaultTextCorpus));
  EXPECT_EQ(static_cast<std::int64_t>(s.train.tokens.size()), static_cast<std::int64_t>(total * 0.9));
  EXPECT_EQ(s.train.count, static_cast<std::int64_t>(s.train.tokens.size()) - 128);
  EXPECT_EQ(s.test.count, 64);
  EXPECT_EQ(s.train.name, "fortunes/train");
}

TEST(TextDefaultCorpus, FortunesFolderReadsEachFileOnce) {
  const fs::path dir = fs::path(kDefaultTextCorpus).parent_path();
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " missing (Debian's fortunes package)";
  // Its files, less the .dat indexes and the .u8 links to the files themselves.
  std::int64_t expected = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink() && e.path().extension() != ".dat")
      expected += static_cast<std::int64_t>(e.file_size());
  EXPECT_EQ(static_cast<std::int64_t>(readTextCorpus(dir.string()).size()), expected);
}

std::vector<std::string> linesOf(const std::vector<std::uint8_t>& stream) {
  std::vector<std::string> lines;
  std::string cur;
  for (const std::uint8_t b : stream) {
    if (b == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(b);
    }
  }
  EXPECT_TRUE(cur.empty()) << "the stream ends with a complete line";
  return lines;
}

TEST(SequenceTasks, ExamplesParseBack) {
  for (const std::string task : {"copy", "reverse", "sort"}) {
    const auto lines = linesOf(sequenceTaskStream(task, 2000, 7, 1));
    ASSERT_EQ(lines.size(), 2000u);
    std::set<std::size_t> lengths;
    for (const std::string& line : lines) {
      const auto bar = line.find('|');
      ASSERT_NE(bar, std::string::npos) << line;
      const std::string prompt = line.substr(0, bar), answer = line.substr(bar + 1);
      ASSERT_GE(prompt.size(), 1u);
      ASSERT_LE(prompt.size(), static_cast<std::size_t>(kMaxTaskPrompt));
      for (const char ch : prompt) ASSERT_TRUE((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z')) << line;
      lengths.insert(prompt.size());
      std::string expected = prompt;
      if (task == "reverse") expected.assign(prompt.rbegin(), prompt.rend());
      if (task == "sort") std::sort(expected.begin(), expected.end());
      ASSERT_EQ(answer, expected) << task << ": " << line;
    }
    EXPECT_EQ(lengths.size(), static_cast<std::size_t>(kMaxTaskPrompt)) << "every prompt length occurs";
  }
  const auto sums = linesOf(sequenceTaskStream("add", 2000, 7, 1));
  std::set<std::size_t> digits;
  for (const std::string& line : sums) {
    const auto plus = line.find('+'), eq = line.find('=');
    ASSERT_TRUE(plus != std::string::npos && eq != std::string::npos && plus < eq) << line;
    const std::string a = line.substr(0, plus), b = line.substr(plus + 1, eq - plus - 1), c = line.substr(eq + 1);
    ASSERT_TRUE(!a.empty() && a.size() <= 3 && (a.size() == 1 || a[0] != '0')) << line;
    ASSERT_TRUE(!b.empty() && b.size() <= 3 && (b.size() == 1 || b[0] != '0')) << line;
    ASSERT_EQ(std::stoll(c), std::stoll(a) + std::stoll(b)) << line;
    ASSERT_EQ(c, std::to_string(std::stoll(c))) << "plain decimal: " << line;
    digits.insert(a.size());
  }
  EXPECT_EQ(digits.size(), 3u);
}

TEST(SequenceTasks, SeededSplitsWindowedLikeText) {
  DataOptions o;
  o.name = "reverse";
  o.sequence = 32;
  o.samples = 1000;
  o.testFraction = 0.2;
  o.seed = 4;
  const DataSplit s = loadDataset(o);
  const auto trainStream = sequenceTaskStream("reverse", 800, 4, 0x5E07A);
  EXPECT_EQ(s.train.tokens, trainStream);
  EXPECT_EQ(linesOf(s.train.tokens).size(), 800u);
  EXPECT_EQ(linesOf(s.test.tokens).size(), 200u);
  EXPECT_EQ(s.train.count, static_cast<std::int64_t>(trainStream.size()) - 32);
  EXPECT_EQ(s.test.count, 64);
  EXPECT_EQ(s.test.windowStarts, validationWindowStarts(static_cast<std::int64_t>(s.test.tokens.size()), 32));
  // The test examples come from a stream of their own, not from the training one's continuation.
  const auto longer = sequenceTaskStream("reverse", 1000, 4, 0x5E07A);
  EXPECT_NE(std::vector<std::uint8_t>(longer.begin() + static_cast<std::ptrdiff_t>(trainStream.size()), longer.end()),
            s.test.tokens);
  EXPECT_EQ(s.train.name, "reverse/train");
  // Deterministic from the seed; another seed, other examples.
  EXPECT_EQ(dataFingerprint(loadDataset(o)), dataFingerprint(s));
  o.seed = 5;
  EXPECT_NE(loadDataset(o).train.tokens, s.train.tokens);
  // Defaults: 20000 examples, no test split when data.test_fraction is 0.
  o.samples = 0;
  o.testFraction = 0;
  const DataSplit all = loadDataset(o);
  EXPECT_EQ(linesOf(all.train.tokens).size(), 20000u);
  EXPECT_EQ(all.test.count, 0);
  EXPECT_EQ(all.test.sampleShape, (Shape{32}));
  EXPECT_TRUE(all.test.isTokenData());
  // A batch of task windows: labels shifted by one.
  BatchLoader loader(s.train, {.batchSize = 16, .seed = 2});
  Batch b;
  ASSERT_TRUE(loader.next(b));
  for (std::size_t p = 0; p + 1 < 32; ++p) EXPECT_EQ(b.labels[p], b.tokens[p + 1]);
}

TEST(SequenceTasks, ErrorsSayWhatToChange) {
  DataOptions o;
  o.name = "add";
  o.sequence = 256;
  o.samples = 10;
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "data.samples = 10: the 8 training examples of add make");
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "(raise data.samples)");
  o.samples = kMaxTaskExamples + 1;
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "data.samples = 10000001: at most 10000000 examples");
  o.samples = 0;
  o.sequence = 0;
  EXPECT_EQ(errorOf([&] { loadDataset(o); }),
            "model.block = 0: data.name=add reads windows of model.block + 1 bytes: must be from 1 to 134217728");
  o.name = "multiply";
  EXPECT_HAS(errorOf([&] { loadDataset(o); }), "unknown data set (expected synthetic");
}

TEST(TextConfig, NamesAndPathAreConfigKeys) {
  RunConfig c;
  for (const std::string name : {"text", "copy", "reverse", "sort", "add"}) {
    setConfigValue(c, "data.name", name);
    EXPECT_EQ(c.data.name, name);
  }
  setConfigValue(c, "data.path", "/tmp/book.txt");
  EXPECT_EQ(c.data.path, "/tmp/book.txt");
  EXPECT_HAS(test::messageOf<ConfigError>([&] { setConfigValue(c, "data.name", "txt"); }),
             "text | copy | reverse | sort | add");
}

}  // namespace
