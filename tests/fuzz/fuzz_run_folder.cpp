// CLI run folders (File > Open on a folder, `ampstudio-cli report`): the input's parts (split as
// fuzz_support.h says) become config.json, metrics.jsonl, histograms.jsonl, events.log and summary.json in
// that order; the first byte says which of them exist (bits 0-4) and whether the run sits in a
// sub-folder of a preset's comparison folder whose summary.json lists it (bit 5). loadRunFolders
// reads it; refusals are RunRecordErrors. A run that loads must survive what saving it does
// (runRecordFiles, then runRecordFromFiles): the app saves opened runs into .ampx files.
#include <cstdint>
#include <string>

#include "engine/io/run_record.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  if (size == 0) return 0;
  const unsigned flags = data[0];
  const QList<QByteArray> parts = fuzz::splitParts(fuzz::bytesOf(data + 1, size - 1));
  static const QString root = fuzz::scratchPath(QStringLiteral("runs"));
  fuzz::freshDir(root);
  QString dir = root;
  if (flags & 0x20) {
    dir = fuzz::freshDir(root + QStringLiteral("/fp16"));
    fuzz::writeFile(root + QStringLiteral("/summary.json"), R"({"runs": [{"label": "fp16"}, {"label": "../x"}]})");
  }
  for (int i = 0; i < 5; ++i)
    if (flags & (1u << i)) fuzz::writeFile(dir + "/" + kRunFiles[i], i < parts.size() ? parts[i] : QByteArray());
  std::vector<RunRecord> runs;
  try {
    runs = loadRunFolders(root);
  } catch (const RunRecordError& e) {
    fuzz::refused(e);
    return 0;
  }
  for (const RunRecord& r : runs) {
    try {
      const RunRecord back = runRecordFromFiles(runRecordFiles(r), QStringLiteral("saved/"));
      if (back.steps.size() != r.steps.size() || back.histograms.size() != r.histograms.size() ||
          back.name != r.name || back.status != r.status || back.tags != r.tags)
        fuzz::fail("run changed when saved and reopened");
    } catch (const RunRecordError& e) {
      fuzz::fail(std::string("a run that loaded does not reopen once saved: ") + e.what());
    }
  }
  return 0;
}
