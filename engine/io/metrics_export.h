// The metrics of selected runs as CSV (spreadsheets, pandas) or JSON (scripts): one table for
// all runs, so they can be compared without joining files.
//
// Columns (CSV: one row per run per step; JSON: one array per column per run):
//   run, step, epoch, loss, loss_smoothed, scale, scale_after, growth_tracker, skipped (0|1),
//   grad_norm, lr, step_ms, samples_per_s, test_loss, test_acc, lost_update_frac,
//   mem_<category> and mem_total (bytes after the step), mem_peak_<category> and mem_peak_total
//   (peak bytes within the step); categories as memCategoryName() spells them; then, for fp8
//   runs, fp8_<tensor>_amax, _scale, _underflow, _overflow and _sqnr_db for each quantised tensor
//   ("fp8_fc2.x_scale"), for the union of the runs' tensors.
// Numbers are written in their shortest exact form; nan/inf/-inf as such (JSON: as strings, as
// metrics.jsonl does); a value the step does not have (test_loss when there was no
// evaluation) is an empty cell (JSON: null).
#pragma once

#include <QByteArray>
#include <QJsonDocument>
#include <QStringList>
#include <vector>

#include "engine/io/run_record.h"

namespace amp {

inline constexpr const char* kMetricsExportFormat = "ampstudio-metrics";
inline constexpr int kMetricsExportVersion = 1;

// The column names after "run", in order (also the keys of each JSON run's "metrics").
QStringList metricsExportColumns();

// RFC 4180: a header line, then the rows; fields with a comma, quote or line break are quoted
// and quotes doubled. Lines end in "\n". smoothing: loss_smoothed's weight (0 = the loss).
QByteArray metricsToCsv(const std::vector<const RunRecord*>& runs, double smoothing);

// {"format": "ampstudio-metrics", "version": 1, "smoothing": w, "runs": [{"name", "status",
//  "config", "summary", "metrics": {"step": [...], "loss": [...], ...}}]}
QJsonDocument metricsToJson(const std::vector<const RunRecord*>& runs, double smoothing);

}  // namespace amp
