// Shared by the GPU trainer tests: a run's whole state moved from one Trainer to another (on
// either backend), the way a checkpoint moves it.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/train/trainer.h"

namespace amp::gpu_test {

// What saveCheckpoint + loadCheckpoint carry, moved directly: the same tensors, as raw bytes
// through the host (toHostBytes / uploadBytes, what the safetensors entries hold), the same
// scalars and the same dicts, applied in the order loadCheckpoint applies them.
inline void moveState(Trainer& from, Trainer& to) {
  const auto src = from.model().parameters();
  const auto dst = to.model().parameters();
  ASSERT_EQ(src.size(), dst.size());
  for (std::size_t i = 0; i < src.size(); ++i)
    to.backend().uploadBytes(dst[i]->value, from.backend().toHostBytes(src[i]->value));
  forgetWeightCopies(dst);  // written in place, as loadCheckpoint does
  const auto srcBuf = from.model().buffers();
  const auto dstBuf = to.model().buffers();
  ASSERT_EQ(srcBuf.size(), dstBuf.size());
  for (std::size_t i = 0; i < srcBuf.size(); ++i)
    to.backend().uploadBytes(*dstBuf[i].second, from.backend().toHostBytes(*srcBuf[i].second));
  std::map<std::string, std::vector<std::uint8_t>> state;
  for (const auto& [name, t] : from.optimizer().stateTensors())
    state[name] = from.backend().toHostBytes(*t);
  to.optimizer().prepareStateForLoad();
  for (const auto& [name, t] : to.optimizer().stateTensors()) {
    if (auto it = state.find(name); it != state.end()) to.backend().uploadBytes(*t, it->second);
    else to.backend().fill(*t, 0.0f);
  }
  to.optimizer().setStateScalars(from.optimizer().stateScalars());
  to.scaler().loadStateDict(from.scaler().stateDict());
  to.restoreProgress(from.progress());
}

}  // namespace amp::gpu_test
