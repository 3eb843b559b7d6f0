// The tiny run behind the checkpoint seeds and fuzz_checkpoint's trainer: small enough that a
// checkpoint zip stays a few KB and a step takes a millisecond, yet with every kind of state
// (Adam moments, a dynamic loss scaler, BatchNorm buffers, a shuffled loader).
#pragma once

#include "engine/config/config_schema.h"

namespace amp::fuzz {

inline RunConfig tinyRunConfig() {
  RunConfig c;
  for (const char* kv : {"data.name=spirals", "data.samples=64", "model.name=mlp", "model.hidden=4",
                         "model.batchnorm=true", "optimizer.name=adam", "train.batch_size=16", "train.steps=1000000",
                         "train.threads=1", "amp.mode=fp16", "scaler.growth_interval=2", "train.histogram_every=2",
                         "seed=5"})
    applyOverride(c, kv);
  return c;
}

}  // namespace amp::fuzz
