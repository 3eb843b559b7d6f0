// CSV data sets (data.name=csv): readCsvDataset on a file holding the input. The first byte
// picks the label-column setting (empty, an index, a negative index or a header name), the rest
// is the file. Refusals are DataErrors; an accepted table must be a consistent data set.
#include <cmath>
#include <cstdint>
#include <string>

#include "engine/data/csv_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  if (size == 0) return 0;
  static const char* const kLabelColumns[] = {"", "0", "1", "-1", "label", "class", "99", "-3"};
  const std::string labelColumn = kLabelColumns[data[0] % 8];
  static const QString path = fuzz::scratchPath(QStringLiteral("table.csv"));
  fuzz::writeFile(path, fuzz::bytesOf(data + 1, size - 1));
  Dataset d;
  try {
    d = readCsvDataset(path.toStdString(), labelColumn);
  } catch (const DataError& e) {
    fuzz::refused(e);
    return 0;
  }
  const auto n = static_cast<std::size_t>(d.count);
  if (d.count <= 0 || d.sampleShape.size() != 1 || d.sampleShape[0] < 1)
    fuzz::fail("accepted a table with no samples or no feature column");
  if (d.features.size() != n * static_cast<std::size_t>(d.featureSize()) || d.labels.size() != n)
    fuzz::fail("features or labels do not match count x features");
  if (d.numClasses < 1 || d.numClasses > 1000 || d.classNames.size() != static_cast<std::size_t>(d.numClasses))
    fuzz::fail("class count " + std::to_string(d.numClasses) + " with " + std::to_string(d.classNames.size()) + " names");
  for (auto l : d.labels)
    if (l < 0 || l >= d.numClasses) fuzz::fail("label " + std::to_string(l) + " outside its classes");
  for (float f : d.features)
    if (!std::isfinite(f)) fuzz::fail("a non-finite feature was accepted");
  return 0;
}
