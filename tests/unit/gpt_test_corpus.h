// A corpus with structure a tiny GPT learns in a few dozen steps: the same three sentences over
// and over, written into a temporary folder (the GPT tests and the fp8 training tests).
#pragma once

#include <QFile>
#include <QTemporaryDir>
#include <gtest/gtest.h>

namespace amp::test {

inline QString writeGptCorpus(const QTemporaryDir& dir) {
  QFile f(dir.filePath("corpus.txt"));
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  for (int i = 0; i < 300; ++i)
    f.write(i % 3 == 0 ? "the cat sat on the mat.\n" : i % 3 == 1 ? "a dog ran in the fog.\n" : "we fly high in the sky.\n");
  return f.fileName();
}

}  // namespace amp::test
