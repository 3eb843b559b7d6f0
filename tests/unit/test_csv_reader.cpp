// CSV tables: header detection, label kinds, and errors that point at the line and field.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "engine/data/csv_reader.h"
#include "engine/data/dataset.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace amp;

namespace {

const auto errorOf = test::messageOf<DataError>;

class CsvTest : public test::ScratchDirTest {
 protected:

  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (m_dir / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

};

TEST_F(CsvTest, HeaderWithIntegerLabels) {
  const Dataset d = readCsvDataset(write("t.csv", "a,b,label\n1,2,0\n3.5,-4e2,2\n+5,6,1\n"));
  EXPECT_EQ(d.name, "t");
  EXPECT_EQ(d.count, 3);
  EXPECT_EQ(d.sampleShape, (Shape{2}));
  EXPECT_EQ(d.features, (std::vector<float>{1, 2, 3.5f, -400, 5, 6}));
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{0, 2, 1}));
  EXPECT_EQ(d.numClasses, 3);
  EXPECT_EQ(d.classNames, (std::vector<std::string>{"0", "1", "2"}));
}

TEST_F(CsvTest, NoHeaderWithStringLabelsInOrderOfAppearance) {
  // Iris-like: the text column alone must not be mistaken for a header.
  const Dataset d = readCsvDataset(write("iris.csv", "5.1,3.5,setosa\r\n6.2,2.9,versicolor\r\n\r\n5.0,3.4,setosa\r\n"));
  EXPECT_EQ(d.count, 3);
  EXPECT_EQ(d.classNames, (std::vector<std::string>{"setosa", "versicolor"}));
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{0, 1, 0}));
  EXPECT_EQ(d.features[0], 5.1f);
}

TEST_F(CsvTest, LabelColumnByNameOrIndex) {
  const std::string p = write("t.csv", "species,x,y\ncat,1,2\ndog,3,4\n");
  Dataset d = readCsvDataset(p, "species");
  EXPECT_EQ(d.classNames, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(d.features, (std::vector<float>{1, 2, 3, 4}));
  d = readCsvDataset(p, "0");
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{0, 1}));
  // Header detected from the label name even with one data row; quotes and ';' accepted.
  d = readCsvDataset(write("q.csv", "\xEF\xBB\xBF\"x\";\"kind\"\n\"1.5\";\"a;b\"\n"), "kind");
  EXPECT_EQ(d.classNames, (std::vector<std::string>{"a;b"}));
  EXPECT_EQ(d.features, (std::vector<float>{1.5f}));
}

TEST_F(CsvTest, RaggedRowNamesLine) {
  const std::string p = write("r.csv", "a,b,c,d,e\n1,2,3,4,0\n\n1,2,3,4\n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(p); }), p + ":4: expected 5 fields, found 4");
}

TEST_F(CsvTest, NonNumberAndNonFinite) {
  const std::string p = write("n.csv", "a,b,c,y\n1,2,3,0\n1,2,abc,1\n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(p); }), p + ":3: field 3 'abc' is not a number");
  const std::string inf = write("i.csv", "1,2,0\n1,inf,1\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(inf); }), inf + ":2: field 2 'inf' is not a finite number");
  const std::string nan = write("nan.csv", "x,y\nnan,1\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(nan); }), "not a finite number");
  const std::string big = write("big.csv", "1e300,1\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(big); }), "too large for float");
  const std::string empty = write("e.csv", "1,,0\n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(empty); }), empty + ":1: field 2 is empty");
  const std::string noLabel = write("nl.csv", "1,2,\n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(noLabel); }), noLabel + ":1: label (field 3) is empty");
}

TEST_F(CsvTest, EmptyFileAndNoData) {
  const std::string e = write("e.csv", "");
  EXPECT_EQ(errorOf([&] { readCsvDataset(e); }), e + ": file is empty");
  const std::string blank = write("b.csv", "\n  \n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(blank); }), blank + ": file is empty");
  const std::string header = write("h.csv", "a,b,label\n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(header); }), header + ": no data rows after the header");
  const std::string one = write("one.csv", "1\n2\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(one); }), "needs at least 2 columns");
  const std::string missing = (m_dir / "missing.csv").string();
  EXPECT_EQ(errorOf([&] { readCsvDataset(missing); }), missing + ": no such file");
  // A FIFO blocked the read forever and /dev/zero ate memory ("no such file" for it was wrong).
  const std::string fifo = (m_dir / "pipe.csv").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(errorOf([&] { readCsvDataset(fifo); }), fifo + ": not a regular file (a folder, device or pipe)");
  EXPECT_EQ(errorOf([&] { readCsvDataset("/dev/zero"); }), "/dev/zero: not a regular file (a folder, device or pipe)");
}

TEST_F(CsvTest, MissingLabelColumn) {
  const std::string p = write("t.csv", "a,b,label\n1,2,0\n");
  EXPECT_EQ(errorOf([&] { readCsvDataset(p, "species"); }),
            p + ": label column 'species' not found in the header (columns: a, b, label)");
  EXPECT_HAS(errorOf([&] { readCsvDataset(p, "3"); }), "label column 3 is out of range (the file has 3 columns");
  const std::string noHeader = write("n.csv", "1,2,0\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(noHeader, "species"); }), "the file has no header row");
}

TEST_F(CsvTest, HugeIntegerLabelIsRejected) {
  const std::string p = write("p.csv", "1,0\n2,250000\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(p); }), p + ":2: label 250000 is too large for a class id");
}

TEST_F(CsvTest, LoadDatasetSplitsStratifiedAndSeeded) {
  std::string text = "x,y,cls\n";
  for (int i = 0; i < 100; ++i)
    text += std::to_string(i) + "," + std::to_string(i * 2) + "," + (i % 4 == 0 ? "rare" : "common") + "\n";
  DataOptions o;
  o.name = "csv";
  o.path = write("s.csv", text);
  o.testFraction = 0.2;
  o.seed = 1;
  const DataSplit a = loadDataset(o);
  EXPECT_EQ(a.train.classNames, (std::vector<std::string>{"rare", "common"}));
  EXPECT_EQ(a.train.name, "s/train");
  EXPECT_EQ(a.test.name, "s/test");
  EXPECT_EQ(a.train.count, 80);
  EXPECT_EQ(a.test.count, 20);
  int rareTest = 0;
  for (auto l : a.test.labels) rareTest += l == 0;  // row 0 is "rare": class 0
  EXPECT_EQ(rareTest, 5);  // 20% of the 25 rare rows
  // Every row lands in exactly one split.
  std::set<float> xs;
  for (const Dataset* d : {&a.train, &a.test})
    for (std::int64_t i = 0; i < d->count; ++i) xs.insert(d->features[2 * i]);
  EXPECT_EQ(xs.size(), 100u);
  EXPECT_EQ(loadDataset(o).test.features, a.test.features);
  o.seed = 2;
  EXPECT_NE(loadDataset(o).test.features, a.test.features);
}

}  // namespace

// Issue 24: nothing is guessed about line 1. A `?` in line 1 of a headerless file made it a
// header (the same `?` on line 6 is an error); a header of column numbers was read as data; two
// columns named like the label column picked the first. Each is refused naming data.header or
// the label's index; data.header=yes / no settles the first two.
TEST_F(CsvTest, AmbiguousFirstLinesAreRefusedNotGuessed) {
  const std::string q = write("q1.csv", "1.0,?,0\n2.0,3.0,1\n4.0,5.0,0\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(q); }), "q1.csv:1: field 2 ('?') is not a number");
  EXPECT_HAS(errorOf([&] { readCsvDataset(q); }), "data.header=yes");
  EXPECT_EQ(readCsvDataset(q, "", "yes").count, 2);
  EXPECT_HAS(errorOf([&] { readCsvDataset(q, "", "no"); }), "not a number");

  const std::string numbered = write("n3.csv", "0,1,2\n1.5,2.5,0\n3.5,4.5,1\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(numbered); }), "n3.csv:1: reads as column numbers");
  EXPECT_EQ(readCsvDataset(numbered, "", "yes").count, 2);
  EXPECT_EQ(readCsvDataset(numbered, "", "no").count, 3);

  const std::string twice = write("twice.csv", "label,x,label\n0,1.5,1\n1,2.5,0\n");
  EXPECT_HAS(errorOf([&] { readCsvDataset(twice, "label"); }), "names columns 0 and 2 of the header");
  EXPECT_EQ(readCsvDataset(twice, "2").count, 2);

  // What stays as it was: a header of names, data of numbers, class names in the label column.
  EXPECT_EQ(readCsvDataset(write("ok1.csv", "a,b,label\n1,2,0\n")).count, 1);
  EXPECT_EQ(readCsvDataset(write("ok2.csv", "1,2,0\n3,4,1\n")).count, 2);
  EXPECT_EQ(readCsvDataset(write("ok3.csv", "5.1,3.5,setosa\n6.2,2.9,versicolor\n")).count, 2);
  EXPECT_EQ(readCsvDataset(write("ok4.csv", "cat,1,2\ndog,3,4\n"), "0").count, 2);
}
