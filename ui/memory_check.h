// The memory check the window makes before it asks for runs: the engine's estimate of what a
// config needs against what this machine has free, so a model that cannot fit is refused with
// both figures before it takes a row in the runs table (the Trainer makes the same check when
// the run starts, for the CLI and for GPU runs, whose free memory only the worker sees).
#pragma once

#include <QString>
#include <QVector>

#include "engine/config/run_config.h"

namespace amp::ui {

struct MemoryCheck {
  QString refusal;  // non-empty: "model.hidden=… needs ≈ 64.2 GiB (…); 22.9 GiB available"
  QString summary;  // "needs ≈ 1.2 GiB of 22.9 GiB available" for the status bar; may be empty
};

// Checks runs that train on the CPU (backend=cpu, or auto without a usable GPU) against the
// host's available memory, all of them together when they would train at once (maxConcurrent).
// A config whose estimate cannot be made (its data fails to load) is left to the run, which
// reports that error itself.
MemoryCheck checkHostMemory(const QVector<RunConfig>& configs, int maxConcurrent);

}  // namespace amp::ui
