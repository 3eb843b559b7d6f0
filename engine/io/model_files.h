// How large a run's model files are at its end, for the tables that compare fp32 with AMP (the
// seeds' "checkpoint 90 MB vs 46 MB"): the resumable checkpoint (fp32 master weights, optimizer
// state, scaler, metrics: about as large under AMP as in fp32) and the weights alone in the
// run's compute dtype (a 16-bit run's is half of fp32's), as `export --weights` writes them.
#pragma once

#include <QString>
#include <cstdint>
#include <string>

#include "engine/train/trainer.h"

namespace amp {

struct ModelFileSizes {
  std::int64_t checkpointBytes = 0;
  std::int64_t weightsBytes = 0;
  std::string weightsDtype;  // "fp32", "fp16", "bf16": the run's compute dtype
};

// checkpoint: a checkpoint just written for the trainer's current state, whose size is taken;
// empty: one is written to a temporary folder, measured and removed. metricsJsonl goes into that
// temporary checkpoint as a real one would carry it. Throws CheckpointError / SafetensorsError.
ModelFileSizes measureModelFiles(Trainer& trainer, const QString& checkpoint,
                                 const QByteArray& metricsJsonl = {});

}  // namespace amp
