// Which settings two runs differ in, key by key (the config schema's dotted keys), and which of
// those make their step times and memory incomparable: another model, data set or batch size
// measures a different workload, so a speed-up against it says nothing about the precision.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

#include "engine/config/run_config.h"

namespace amp::ui {

struct ConfigDifference {
  QString key;  // "optimizer.lr"
  QString a, b;  // the two runs' values as the schema writes them
};

// Every schema key whose value differs, in the schema's order (run names are not settings).
QVector<ConfigDifference> configDifferences(const RunConfig& a, const RunConfig& b);

// The keys among model.*, data.* and train.batch_size that differ: a ratio of step times or
// memory between two such runs compares workloads, not precisions.
QStringList workloadDifferences(const RunConfig& a, const RunConfig& b);

}  // namespace amp::ui
