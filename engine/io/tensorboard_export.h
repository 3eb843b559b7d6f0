// Runs as TensorBoard event files: scalars (loss, loss scale, skipped steps, gradient norm,
// learning rate, memory, throughput, test loss and accuracy), the gradient and activation
// histograms by binary exponent per tensor, and the config as text. Each step also carries its
// metrics.jsonl line, and each histogram its histograms.jsonl line, under "ampstudio/..." tags
// that TensorBoard ignores, so that importing the file back (tensorboard_import.h) gives the run
// exactly as it was.
#pragma once

#include <QString>
#include <string>
#include <vector>

#include "engine/io/run_record.h"

namespace amp {

// The tags the export writes (and the import reads first). TensorBoard groups by the part
// before the first '/'.
namespace tbtag {
inline constexpr const char* kConfig = "ampstudio/config";      // config.json (TensorBoard's Text tab)
inline constexpr const char* kSummary = "ampstudio/summary";    // summary.json, at the last step
inline constexpr const char* kEvents = "ampstudio/events";      // events.log, at the last step
inline constexpr const char* kMetrics = "ampstudio/metrics";    // one metrics.jsonl line a step
inline constexpr const char* kHistogramPrefix = "ampstudio/histogram/";  // + kind/tensor
inline constexpr const char* kExponentsUnscaled = "exponents_unscaled/";  // + kind/tensor
inline constexpr const char* kExponentsScaled = "exponents_scaled/";
}  // namespace tbtag

// The exponent histograms' extra buckets, on the log2 axis: [-41, -40) holds the zeros and
// [18, 19) the infinities and NaNs (beside [e, e + 1) for exponents -40..17).
inline constexpr double kTbZeroBucketLeft = -41;
inline constexpr double kTbNonFiniteBucketLeft = 18;

// One run as the bytes of one event file. Wall times: `startWallTime` (seconds since the epoch)
// plus the run's cumulative step times, since run folders keep durations, not clock times.
std::string tensorboardEventFile(const RunRecord& r, double startWallTime);

// Writes each run into dir/<index>-<name>/events.out.tfevents.<time>.ampstudio (the folder
// layout TensorBoard reads as one run per sub-folder), each file atomically. Refuses, before
// writing anything, a run folder that already holds event files (TensorBoard would show both).
// Returns the files written. Throws RunRecordError / OutputError with one line.
std::vector<QString> writeTensorBoardFolder(const std::vector<const RunRecord*>& runs, const QString& dir);

}  // namespace amp
