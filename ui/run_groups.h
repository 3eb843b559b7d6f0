// Runs started together form a group: a lesson's variants ("underflow/fp32", "underflow/fp16")
// or twin runs ("spirals fp32", "spirals fp16", "spirals bf16"). The group is what their
// comparison is about: its fp32 member is the others' baseline, and the runs table can select,
// hide or clear it as one.
#pragma once

#include <QSet>
#include <QString>
#include <QVector>

#include "engine/config/run_config.h"

namespace amp::ui {

struct RunData;

// The group name for runs started together: the lesson's name when every config is named
// "<lesson>/<variant>", else "<common stem> twins" (the stem the names share, else the model);
// " #2", " #3", ... when a group of that name exists already. "" for fewer than two configs:
// a run on its own is no group.
QString groupNameFor(const QVector<RunConfig>& configs, const QSet<QString>& existingGroups);

// The fp32 run a run is compared with when the user forced no baseline: the fp32 member of its
// own group, else (an fp32 run is its own) the latest fp32 run of the same workload (model,
// data, batch size); nullptr when there is none.
const RunData* automaticBaseline(const RunData& run, const QVector<RunData*>& runs);

}  // namespace amp::ui
