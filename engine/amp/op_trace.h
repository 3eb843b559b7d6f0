// One row of the per-op dtype trace of a training step: what each op ran in and why.
#pragma once

#include <string>
#include <vector>

#include "engine/amp/autocast_policy.h"

namespace amp {

enum class TracePhase : std::uint8_t { Forward, Backward, Optimizer };

struct OpTraceEntry {
  TracePhase phase = TracePhase::Forward;
  std::string layer;               // "2" (index in the model), "loss", "scaler"
  std::string op;                  // "linear", "relu", "cross_entropy", ...
  CastPolicy policy = CastPolicy::PassThrough;
  bool autocastEnabled = false;    // whether the op ran inside an enabled autocast region
  std::vector<DType> inputDtypes;  // as the op received them, before autocast's casts
  DType computeDtype = DType::F32;
  DType outputDtype = DType::F32;
  int castsInserted = 0;           // casts autocast made (cache misses included)
  int cacheHits = 0;               // weight casts served from the per-forward cache
  std::string note;                // e.g. "weight cast cached", "grad cast to fp32 for .grad"
};

std::string_view tracePhaseName(TracePhase p);

}  // namespace amp
