// Experiment files (.ampx): openAnything and loadExperiment on the input (open_zip.h says how
// it becomes a file). Refusals are ExperimentErrors. What opens must save (saveExperiment, as
// File > Save does) into a file that opens again with the same runs.
#include <cstdint>
#include <string>

#include "engine/io/experiment_file.h"
#include "tests/fuzz/open_zip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  const QString path = fuzz::zipFileFromInput(data, size, QStringLiteral("session.ampx"));
  if (path.isEmpty()) return 0;
  try {
    (void)loadExperiment(path);
  } catch (const ExperimentError& e) {
    fuzz::refused(e);
  }
  const auto runs = fuzz::openRuns(path);
  if (!runs) return 0;
  static const QString saved = fuzz::scratchPath(QStringLiteral("saved.ampx"));
  try {
    saveExperiment(saved, *runs);
  } catch (const ExperimentError& e) {
    fuzz::fail(std::string("an experiment that opened cannot be saved: ") + e.what());
  }
  const auto again = fuzz::openRuns(saved);
  if (!again || again->size() != runs->size()) fuzz::fail("a saved experiment does not open again with its runs");
  for (std::size_t i = 0; i < runs->size(); ++i) {
    const RunRecord &a = (*runs)[i].record, &b = (*again)[i].record;
    if (a.name != b.name || a.steps.size() != b.steps.size() || (*runs)[i].checkpointZip != (*again)[i].checkpointZip)
      fuzz::fail("run " + std::to_string(i) + " changed when saved and reopened");
  }
  return 0;
}
