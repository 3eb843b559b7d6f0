// The fp8 figures of a step (StepMetrics::fp8) in metrics.jsonl: an "fp8" array, one object per
// quantised tensor (absent for runs that quantise nothing, so their lines stay as they were).
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <vector>

#include "engine/amp/fp8_record.h"

namespace amp {

QJsonArray fp8RecordsToJson(const std::vector<Fp8TensorRecord>& records);
// One record's block grid ("block_grid" above; the app's block scales view saves it alone too).
QJsonObject fp8BlockGridToJson(const Fp8BlockGrid& grid);
std::vector<Fp8TensorRecord> fp8RecordsFromJson(const QJsonArray& a);

}  // namespace amp
