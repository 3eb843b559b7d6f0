// Run bundles (one run's zip): openAnything on the input (open_zip.h says how it becomes a
// file). Refusals are ExperimentErrors. A bundle that opens must be written again by
// writeRunBundle (the app's Export bundle) into one that opens with the same run.
#include <cstdint>
#include <string>

#include "engine/io/run_bundle.h"
#include "tests/fuzz/open_zip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  const QString path = fuzz::zipFileFromInput(data, size, QStringLiteral("run-bundle.zip"));
  if (path.isEmpty()) return 0;
  const auto runs = fuzz::openRuns(path);
  if (!runs || runs->size() != 1) return 0;  // one run: a bundle (an .ampx may hold several)
  const ExperimentRun& run = runs->front();
  static const QString saved = fuzz::scratchPath(QStringLiteral("saved-bundle.zip"));
  try {
    writeRunBundle(saved, run.record, {}, run.checkpointZip);
  } catch (const ExperimentError& e) {
    fuzz::fail(std::string("a run that opened cannot be written as a bundle: ") + e.what());
  }
  const auto again = fuzz::openRuns(saved);
  if (!again || again->size() != 1) fuzz::fail("a written bundle does not open again");
  const RunRecord &a = run.record, &b = again->front().record;
  if (a.steps.size() != b.steps.size() || a.events != b.events || run.checkpointZip != again->front().checkpointZip)
    fuzz::fail("the run changed when written as a bundle and reopened");
  return 0;
}
