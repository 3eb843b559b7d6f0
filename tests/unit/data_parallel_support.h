// Shared by the data-parallel tests (unit: CPU ranks; gpu: CUDA ranks): `ranks` trainers of one
// config, one per thread, joined through ThreadCommunicator, each with the backend `backendOf`
// makes for its rank (nullptr: the config's).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/dist/data_parallel.h"
#include "engine/dist/thread_communicator.h"
#include "engine/train/trainer.h"

namespace amp::test {

struct RankRun {
  std::vector<StepMetrics> steps;
  std::uint64_t digest = 0;  // modelDigest at the end: equal on every rank when the replicas are
};

inline std::vector<RankRun> trainOnRanks(const RunConfig& c, int ranks,
                                         const std::function<std::unique_ptr<Backend>(int)>& backendOf = {}) {
  auto all = std::make_shared<ThreadRanks>(ranks);
  std::vector<RankRun> out(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(all, r);
      RunConfig mine = c;
      mine.train.threads = 1;
      Trainer t(mine, backendOf ? backendOf(r) : nullptr);
      if (ranks > 1) t.joinRanks(comm);
      while (!t.finished()) out[std::size_t(r)].steps.push_back(t.step());
      out[std::size_t(r)].digest = modelDigest(t.backend(), t.model());
    });
  for (auto& th : threads) th.join();
  return out;
}

}  // namespace amp::test
