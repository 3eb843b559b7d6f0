// TensorBoard event files (tensorboard_import.h): the whole input as one event file of one run.
// Damage must be refused with RunRecordError (never a crash, a hang or a huge allocation), and
// whatever is read must survive our export: importing the exported file gives the same run
// files again (File > Open of a log folder, then File > Export to TensorBoard, then Open again).
#include <cstdint>
#include <string>

#include "engine/io/run_record.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/tensorboard_import.h"
#include "engine/io/tfevents_records.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    (void)tfevents::splitRecords(bytes, "f");
  } catch (const tfevents::RecordError& e) {
    fuzz::refused(e);
  }
  RunRecord r;
  try {
    r = tensorBoardRunFromFiles({{"events.out.tfevents.1.fuzz", bytes}}, "logs/", "fuzz");
  } catch (const RunRecordError& e) {
    fuzz::refused(e);
    return 0;
  }
  const auto once = runRecordFiles(r);
  RunRecord back;
  try {
    back = tensorBoardRunFromFiles({{"events.out.tfevents.2.fuzz", tensorboardEventFile(r, 0)}}, "logs/", "fuzz");
  } catch (const RunRecordError& e) {
    fuzz::fail(std::string("our own export of an imported run was refused: ") + e.what());
  }
  const auto twice = runRecordFiles(back);
  for (const char* f : kRunFiles)
    if (once.at(f) != twice.at(f))
      fuzz::fail(std::string(f) + " changed through an export and import:\n" + once.at(f).toStdString() +
                 "\n---\n" + twice.at(f).toStdString());
  return 0;
}
