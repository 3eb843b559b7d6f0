// Where the experiment panel puts each config key (tabs, groups, labels), when a key matters
// (model.width only for the recipe MLP, scaler.hysteresis only for that scaler...), and the
// explanation of each precision mode. Data and rules only; ExperimentPanel builds the widgets.
#pragma once

#include <QString>
#include <string>
#include <utility>
#include <vector>

#include "engine/config/run_config.h"

namespace amp::ui::experiment_layout {

// A tab: group titles with their keys, in order.
using Groups = std::vector<std::pair<QString, std::vector<std::string>>>;

// Rows that are not config keys: notes and buttons placed between the fields.
inline const std::string kModeNote = "#mode_note", kBackendNote = "#backend_note",
                         kScalerNote = "#scaler_note", kScalerDefaults = "#scaler_defaults";

extern const Groups kModelTab;      // model and data
extern const Groups kPrecisionTab;  // precision mode, backend, loss scaler
extern const Groups kTrainingTab;   // optimizer, schedule, steps and batches, telemetry

QString labelFor(const std::string& key);
// Whether `key` matters for `c`: irrelevant rows are hidden and their parse errors ignored.
bool relevant(const std::string& key, const RunConfig& c);
QString modeExplanation(PrecisionMode m);

}  // namespace amp::ui::experiment_layout
