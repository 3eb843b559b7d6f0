// DDP's average over the ranks as the host path computes it (engine/dist/data_parallel.cpp) and
// the NCCL path must too (kernels/common/rank_average.h, issue 41): each rank's 16-bit gradient
// widened exactly, summed in fp32, divided (not multiplied by 1/N) and rounded once. Checked on
// the CPU with ThreadCommunicator ranks against a reference computed in double. The cases are
// the ones that tell the average apart from the cheaper ones: fp16 gradients whose sum over the
// ranks overflows fp16 (a sum in fp16 gives inf and the scaler skips a step DDP would take),
// and three ranks where x * (1/3) and x / 3 differ in fp32. Also: a rank that stops answering
// ends the others' collective within the ranks' timeout (the host path's dist.timeout_s).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "engine/dist/data_parallel.h"
#include "engine/dist/thread_communicator.h"
#include "kernels/common/float16.h"
#include "kernels/common/rank_average.h"

using namespace amp;

namespace {

// Each rank's gradient values (as floats exactly representable in dtype) through the host path.
std::vector<std::vector<float>> averageOnRanks(const std::vector<std::vector<float>>& perRank, DType dtype) {
  const int ranks = static_cast<int>(perRank.size());
  auto all = std::make_shared<ThreadRanks>(ranks);
  std::vector<std::vector<float>> out(perRank.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(all, r);
      CpuBackend be;
      const auto& v = perRank[std::size_t(r)];
      const Shape shape{static_cast<std::int64_t>(v.size())};
      Parameter p;
      p.name = "w";
      p.value = be.zeros(shape, dtype, MemCategory::Weights);
      p.grad = be.fromHost(v, shape, dtype, MemCategory::Gradients);
      allReduceGradients(be, comm, {&p}, 1 << 20);
      out[std::size_t(r)] = be.toHostFloat(p.grad);
    });
  for (auto& t : threads) t.join();
  return out;
}

// The average in double (the sums here are exact in fp32 and double alike), rounded to dtype.
// Rounding the double to fp32 first changes nothing: fp32 has more than twice fp16's and bf16's
// bits plus two, so that double rounding is innocuous.
float reference(const std::vector<std::vector<float>>& perRank, std::size_t i, DType dtype) {
  double sum = 0;
  for (const auto& v : perRank) sum += v[i];
  const float avg = static_cast<float>(sum / double(perRank.size()));
  return dtype == DType::F16 ? roundToHalf(avg) : dtype == DType::BF16 ? roundToBf16(avg) : avg;
}

void expectBits(float got, float want, const std::string& what) {
  EXPECT_EQ(floatBits(got), floatBits(want)) << what << ": got " << got << ", want " << want;
}

}  // namespace

// Two ranks' fp16 gradients near fp16's top: their sum is beyond 65504, their average is not.
TEST(DataParallelAverage, Fp16GradientsWhoseSumOverflowsFp16AverageToFiniteValues) {
  std::vector<std::vector<float>> g{{40000.f, 65504.f, -60000.f, 33024.f, 1.f},
                                    {40000.f, 65472.f, -50016.f, 33024.f, 3.f}};
  for (auto& rank : g)
    for (float v : rank) ASSERT_EQ(v, roundToHalf(v)) << "not an fp16 value: " << v;
  for (std::size_t i = 0; i < 4; ++i)  // the case: a sum in fp16 would be inf
    ASSERT_TRUE(std::isinf(roundToHalf(g[0][i] + g[1][i]))) << i;
  const auto out = averageOnRanks(g, DType::F16);
  for (const auto& rank : out)
    for (std::size_t i = 0; i < g[0].size(); ++i) {
      EXPECT_TRUE(std::isfinite(rank[i])) << i;
      expectBits(rank[i], reference(g, i, DType::F16), "fp16 element " + std::to_string(i));
      expectBits(rank[i], rankAverageRounded(g[0][i] + g[1][i], 2.f, 1), "shared code, element " + std::to_string(i));
    }
}

// Three ranks: a division, as the host path has always done, not a product with 1/3 (the NCCL
// path used to multiply); the case is one where the two differ in fp32.
TEST(DataParallelAverage, ThreeRanksDivideRatherThanMultiplyByAThird) {
  float s = 1.f;
  while (s * (1.f / 3.f) == s / 3.f) s = std::nextafter(s, 2.f);
  const std::vector<std::vector<float>> g{{s, 10.f}, {0.f, 20.f}, {0.f, 1.f}};
  const auto out = averageOnRanks(g, DType::F32);
  for (const auto& rank : out) {
    expectBits(rank[0], s / 3.f, "the element where x/3 and x*(1/3) differ");
    EXPECT_NE(floatBits(rank[0]), floatBits(s * (1.f / 3.f)));
    expectBits(rank[1], reference(g, 1, DType::F32), "31/3");
    expectBits(rank[1], rankAverageRounded(31.f, 3.f, 0), "shared code");
  }
}

// bf16 keeps fp32's range; what matters there is one rounding after the division.
TEST(DataParallelAverage, Bf16GradientsRoundOnceAfterTheDivision) {
  const std::vector<std::vector<float>> g{{roundToBf16(1.0078125f), roundToBf16(3.f), roundToBf16(-7.5f)},
                                          {roundToBf16(1.0078125f * 2), roundToBf16(5.f), roundToBf16(2.25f)},
                                          {roundToBf16(1.f), roundToBf16(1.f), roundToBf16(0.03125f)}};
  const auto out = averageOnRanks(g, DType::BF16);
  for (const auto& rank : out)
    for (std::size_t i = 0; i < g[0].size(); ++i)
      expectBits(rank[i], reference(g, i, DType::BF16), "bf16 element " + std::to_string(i));
}

// A rank that stops: the others' collective ends with a CommunicatorError within the timeout.
TEST(DataParallelAverage, AStoppedRankEndsTheOthersCollectiveWithinTheTimeout) {
  auto all = std::make_shared<ThreadRanks>(3, 0.3);
  std::vector<std::string> errors(3);
  std::vector<double> seconds(3, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)  // rank 2 never takes part
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(all, r);
      float v = 1.f;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        comm.allReduceSum(std::span<float>(&v, 1), "gradient all-reduce");
      } catch (const CommunicatorError& e) {
        errors[std::size_t(r)] = e.what();
      }
      seconds[std::size_t(r)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[std::size_t(r)].find("gradient all-reduce did not complete within 0.3 s"), std::string::npos)
        << errors[std::size_t(r)];
    EXPECT_LT(seconds[std::size_t(r)], 5.0);
  }
  ThreadCommunicator late(all, 2);  // the stopped rank, back too late: refused at once
  float v = 0;
  EXPECT_THROW(late.allReduceSum(std::span<float>(&v, 1), "late"), CommunicatorError);
}
