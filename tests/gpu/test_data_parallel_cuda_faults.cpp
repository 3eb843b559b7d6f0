// What issue 41 found the GPU suite could not catch in data-parallel runs: NCCL's error handling
// (which needs only one GPU: a communicator whose other rank never comes must time out, not
// hang; a one-rank communicator runs the non-blocking all-reduce and the average kernel), fp16
// gradients whose sum over the ranks overflows fp16 (one GPU through the average kernel, two
// through NCCL itself, compared with the host path), and a rank that stops mid-run (two ranks
// sharing one GPU through host memory, and two GPUs through NCCL): the others end with a
// CommunicatorError within the ranks' timeout.
#include <chrono>
#include <cmath>
#include <thread>

#include "engine/backend/cpu_backend.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_nccl.h"
#include "engine/backend/cuda_nccl_watch.h"
#include "engine/config/config_schema.h"
#include "kernels/common/float16.h"
#include "kernels/common/rank_average.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/unit/data_parallel_support.h"

using namespace amp;

namespace {

std::unique_ptr<cudabk::NcclRanks> loadNccl(std::string& why) {
  auto nccl = cudabk::NcclRanks::load(&why);
  return nccl;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Rank 0 of two, and rank 1 never joins: the set-up ends at its deadline with one line, and the
// communicator refuses every later all-reduce instead of waiting.
TEST(NcclFaults, ASetUpWhoseOtherRankNeverComesTimesOut) {
  AMP_SKIP_WITHOUT_GPU();
  std::string why;
  auto nccl = loadNccl(why);
  if (!nccl) GTEST_SKIP() << "no NCCL here: " << why;
  auto be = makeBackend("cuda");
  auto* cuda = dynamic_cast<CudaBackend*>(be.get());
  ASSERT_NE(cuda, nullptr);
  cuda->useDevice();
  const auto id = nccl->uniqueId();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string error = nccl->init(0, 2, id, 2.0);
  const double s = secondsSince(t0);
  EXPECT_NE(error.find("rank 0: NCCL's set-up"), std::string::npos) << error;
  EXPECT_NE(error.find("did not complete within 2 s"), std::string::npos) << error;
  EXPECT_GE(s, 2.0);
  EXPECT_LT(s, 20.0) << "the abort itself hung";
  EXPECT_FALSE(nccl->ready());
  Tensor g = be->zeros({4}, DType::F32, MemCategory::Gradients);
  const cudabk::NcclAverageBuffer b{g.data<float>(), 4, 0, g.rawData()};
  EXPECT_THROW(nccl->allReduceAverage({&b, 1}, 2.f, cuda->stream(), 1.0), CommunicatorError);
}

// A one-rank communicator: the non-blocking set-up, the all-reduce and the average kernel run
// for real. Dividing by 2 a one-rank "sum" of 80000 stands in for two ranks' fp16 40000s: the
// fp32 sum NCCL carries is beyond fp16, the average (40000) is not, and every element equals the
// shared code's (kernels/common/rank_average.h) bit for bit, fp16 and bf16.
TEST(NcclFaults, AOneRankCommunicatorAveragesAsTheSharedCodeDoes) {
  AMP_SKIP_WITHOUT_GPU();
  std::string why;
  auto nccl = loadNccl(why);
  if (!nccl) GTEST_SKIP() << "no NCCL here: " << why;
  auto be = makeBackend("cuda");
  auto* cuda = dynamic_cast<CudaBackend*>(be.get());
  ASSERT_NE(cuda, nullptr);
  cuda->useDevice();
  ASSERT_EQ(nccl->init(0, 1, nccl->uniqueId(), 30.0), "");
  const std::vector<float> sums{80000.f, 131008.f, -100000.f, 3.f, 1e-7f, 65504.f * 2, 12345.678f, -0.f};
  for (int code : {1, 2, 0}) {
    const DType d = code == 1 ? DType::F16 : code == 2 ? DType::BF16 : DType::F32;
    Tensor wide = be->fromHost(sums, {std::int64_t(sums.size())}, DType::F32, MemCategory::Workspace);
    Tensor g = be->zeros({std::int64_t(sums.size())}, d, MemCategory::Gradients);
    const cudabk::NcclAverageBuffer b{wide.data<float>(), std::int64_t(sums.size()), code, g.rawData()};
    nccl->allReduceAverage({&b, 1}, 2.f, cuda->stream(), 30.0);
    const std::vector<float> got = be->toHostFloat(g);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      EXPECT_EQ(floatBits(got[i]), floatBits(rankAverageRounded(sums[i], 2.f, code)))
          << gpu_test::name(d) << " [" << i << "]: " << got[i];
      if (code == 1 && std::fabs(sums[i]) <= 131008.f) {
        EXPECT_TRUE(std::isfinite(got[i])) << i;
      }
    }
  }
}

// Two ranks sharing one GPU (host memory between them), the second stopping after two steps:
// the first's next all-reduce ends with a CommunicatorError within the ranks' timeout.
TEST(NcclFaults, AStoppedRankEndsTheOtherWithinTheTimeoutOnOneGpu) {
  AMP_SKIP_WITHOUT_GPU();
  RunConfig c;
  for (const char* s : {"backend=cuda", "model.width=64", "train.batch_size=32", "train.steps=6",
                        "train.histogram_every=0", "amp.mode=fp16"})
    applyOverride(c, s);
  auto all = std::make_shared<ThreadRanks>(2, 2.0);
  std::string error;
  double seconds = 0;
  std::thread stopper([&] {
    ThreadCommunicator comm(all, 1);
    Trainer t(c, makeBackend("cuda"));
    t.joinRanks(comm);
    t.step();
    t.step();  // then it stops answering
  });
  {
    ThreadCommunicator comm(all, 0);
    Trainer t(c, makeBackend("cuda"));
    t.joinRanks(comm);
    auto t0 = std::chrono::steady_clock::now();
    try {
      for (int i = 0; i < 6; ++i) {
        t0 = std::chrono::steady_clock::now();
        t.step();
      }
    } catch (const CommunicatorError& e) {
      error = e.what();
      seconds = secondsSince(t0);
    }
  }
  stopper.join();
  EXPECT_NE(error.find("did not complete within 2 s"), std::string::npos) << error;
  EXPECT_LT(seconds, 10.0);
}

// Two GPUs through NCCL: pure-fp16 gradients whose sum overflows fp16 average to what the host
// path gives on the CPU, bit for bit; then rank 1 stops and rank 0's next all-reduce ends within
// the timeout with the communicator aborted.
TEST(NcclFaults, TwoGpusAverageFp16LikeTheHostPathAndSurviveAStoppedRank) {
  AMP_SKIP_WITHOUT_GPU();
  if (gpuInventory().devices.size() < 2) GTEST_SKIP() << "one GPU here: NCCL needs a GPU per rank";
  std::string why;
  if (!loadNccl(why)) GTEST_SKIP() << "no NCCL here: " << why;
  std::vector<std::vector<float>> g{{40000.f, 65504.f, -60000.f, 1.f, 0.5f}, {40000.f, 65472.f, -50016.f, 3.f, 0.25f}};
  const std::size_t n = g[0].size();
  auto average = [&](bool cuda, std::vector<std::vector<float>>& out, bool stopRank1) {
    auto all = std::make_shared<ThreadRanks>(2, 4.0);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        ThreadCommunicator comm(all, r);
        std::unique_ptr<Backend> be = cuda ? makeBackend("cuda:" + std::to_string(gpuInventory().devices[std::size_t(r)].ordinal))
                                           : std::make_unique<CpuBackend>();
        Parameter p;
        p.name = "w";
        p.value = be->zeros({std::int64_t(n)}, DType::F16, MemCategory::Weights);
        p.grad = be->fromHost(g[std::size_t(r)], {std::int64_t(n)}, DType::F16, MemCategory::Gradients);
        try {
          allReduceGradients(*be, comm, {&p}, 1 << 20);
          out[std::size_t(r)] = be->toHostFloat(p.grad);
          if (stopRank1 && r == 0) allReduceGradients(*be, comm, {&p}, 1 << 20);  // rank 1 is gone
        } catch (const CommunicatorError& e) {
          errors[std::size_t(r)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    return errors;
  };
  std::vector<std::vector<float>> host(2), device(2);
  average(false, host, false);
  const auto errors = average(true, device, true);
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(std::isfinite(device[std::size_t(r)][i])) << r << " " << i;
      EXPECT_EQ(floatBits(device[std::size_t(r)][i]), floatBits(host[std::size_t(r)][i])) << r << " " << i;
    }
  EXPECT_NE(errors[0].find("did not complete within 4 s"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("NCCL communicator was aborted"), std::string::npos) << errors[0];
}
