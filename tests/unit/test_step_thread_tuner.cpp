// The step thread tuner (engine/train/step_thread_tuner.h): which thread count it tries when, what
// it keeps, when it looks again; fed hand-made step times, the ones measured on 2 vCPUs included.
// And the promise it rests on: a run's numbers are the same bits on 1 and on 2 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/config/config_schema.h"
#include "engine/train/step_thread_tuner.h"
#include "engine/train/trainer.h"
#include "kernels/cpu/cpu_budget.h"

using namespace amp;

namespace {

// Steps `count` plain steps on `tuner`, each taking timeOf(threads) seconds; the counts used.
template <class TimeOf>
std::vector<int> plainSteps(StepThreadTuner& tuner, int limit, int count, TimeOf timeOf) {
  std::vector<int> used;
  for (int i = 0; i < count; ++i) {
    const int t = tuner.next(limit, true);
    tuner.record(t, timeOf(t), true);
    used.push_back(t);
  }
  return used;
}

}  // namespace

TEST(StepThreadTuner, CandidatesAreTheShareHalfOfItAndOne) {
  EXPECT_EQ(StepThreadTuner::candidatesFor(1), (std::vector<int>{1}));
  EXPECT_EQ(StepThreadTuner::candidatesFor(2), (std::vector<int>{2, 1}));
  EXPECT_EQ(StepThreadTuner::candidatesFor(3), (std::vector<int>{3, 1}));
  EXPECT_EQ(StepThreadTuner::candidatesFor(8), (std::vector<int>{8, 4, 1}));
  EXPECT_EQ(StepThreadTuner::candidatesFor(0), (std::vector<int>{1}));
}

TEST(StepThreadTuner, AQuietMachineKeepsBothThreads) {
  StepThreadTuner tuner;
  // Probe: the counts take turns, 2 1 2 1; then two threads (100 ms against 160) train on.
  const auto used = plainSteps(tuner, 2, 6, [](int t) { return t == 2 ? 0.100 : 0.160; });
  EXPECT_EQ(used, (std::vector<int>{2, 1, 2, 1, 2, 2}));
  EXPECT_FALSE(tuner.probing());
  EXPECT_EQ(tuner.current(), 2);
  EXPECT_EQ(tuner.lastDecision(), "2 threads: 100.0 ms a step against 160.0 ms on 1");
}

TEST(StepThreadTuner, ABusyMachineTrainsOnOneThread) {
  StepThreadTuner tuner;
  // The gpt preset's bf16 step on 2 vCPUs beside a two-job build: 3,067 ms on 2, 869 ms on 1.
  const auto used = plainSteps(tuner, 2, 7, [](int t) { return t == 2 ? 3.067 : 0.869; });
  EXPECT_EQ(used, (std::vector<int>{2, 1, 2, 1, 1, 1, 1}));
  EXPECT_EQ(tuner.current(), 1);
  EXPECT_EQ(tuner.lastDecision(), "1 thread: 869.0 ms a step against 3067.0 ms on 2");
  EXPECT_EQ(tuner.decisions(), 1);
}

TEST(StepThreadTuner, FewerThreadsMustBeFivePercentFaster) {
  StepThreadTuner a;
  plainSteps(a, 2, 4, [](int t) { return t == 2 ? 0.100 : 0.0960; });  // 4% faster: noise
  EXPECT_EQ(a.current(), 2);
  StepThreadTuner b;
  plainSteps(b, 2, 4, [](int t) { return t == 2 ? 0.100 : 0.0940; });  // 6% faster
  EXPECT_EQ(b.current(), 1);
  // Three candidates: 4 must beat 8 by 5%, and 1 must beat the better of them by 5%.
  StepThreadTuner c;
  plainSteps(c, 8, 6, [](int t) { return t == 8 ? 0.100 : t == 4 ? 0.090 : 0.088; });
  EXPECT_EQ(c.current(), 4);
  EXPECT_EQ(c.lastDecision(), "4 threads: 90.0 ms a step against 100.0 ms on 8, 88.0 ms on 1");
}

TEST(StepThreadTuner, UntimedStepsRunOnTheCurrentChoiceAndDoNotCount) {
  StepThreadTuner tuner;
  EXPECT_EQ(tuner.next(2, false), 2);  // the first step: not timed, the share
  tuner.record(2, 5.0, false);         // its slow time is ignored
  EXPECT_EQ(tuner.next(2, true), 2);
  tuner.record(2, 0.100, true);
  EXPECT_EQ(tuner.next(2, false), 2);  // a histogram step in the middle of a probe: not 1
  tuner.record(2, 9.0, false);
  EXPECT_EQ(tuner.next(2, true), 1);  // the probe goes on where it was
  tuner.record(1, 0.160, true);
  plainSteps(tuner, 2, 2, [](int t) { return t == 2 ? 0.100 : 0.160; });
  EXPECT_EQ(tuner.current(), 2);
  EXPECT_EQ(tuner.decisions(), 1);
}

TEST(StepThreadTuner, ProbesAgainAfterTwentyStepsAndLessOftenWhileTheAnswerHolds) {
  StepThreadTuner tuner;
  auto quiet = [](int t) { return t == 2 ? 0.100 : 0.160; };
  plainSteps(tuner, 2, 4, quiet);  // the first probe
  auto used = plainSteps(tuner, 2, 20, quiet);
  EXPECT_EQ(used, std::vector<int>(20, 2));
  EXPECT_TRUE(tuner.probing());  // after 20 plain steps
  plainSteps(tuner, 2, 4, quiet);
  EXPECT_EQ(tuner.decisions(), 2);
  used = plainSteps(tuner, 2, 39, quiet);  // the same answer: 40 steps before the next probe
  EXPECT_EQ(used, std::vector<int>(39, 2));
  EXPECT_FALSE(tuner.probing());
  plainSteps(tuner, 2, 1, quiet);
  EXPECT_TRUE(tuner.probing());
}

TEST(StepThreadTuner, ALoadThatRisesStartsAProbeAndMovesToOneThread) {
  StepThreadTuner tuner;
  plainSteps(tuner, 2, 4, [](int t) { return t == 2 ? 0.100 : 0.160; });
  ASSERT_EQ(tuner.current(), 2);
  // A build starts: two threads now take 3x as long. One slow step is not enough (a hiccup)...
  plainSteps(tuner, 2, 1, [](int) { return 0.300; });
  plainSteps(tuner, 2, 1, [](int) { return 0.100; });
  EXPECT_FALSE(tuner.probing());
  // ...two in a row are.
  auto busy = [](int t) { return t == 2 ? 0.300 : 0.170; };
  plainSteps(tuner, 2, 2, busy);
  EXPECT_TRUE(tuner.probing());
  const auto used = plainSteps(tuner, 2, 5, busy);
  EXPECT_EQ(used, (std::vector<int>{2, 1, 2, 1, 1}));
  EXPECT_EQ(tuner.current(), 1);
}

TEST(StepThreadTuner, AChangedShareStartsOverAndAShareOfOneNeverProbes) {
  StepThreadTuner tuner;
  plainSteps(tuner, 2, 4, [](int t) { return t == 2 ? 3.0 : 0.9; });
  ASSERT_EQ(tuner.current(), 1);
  // A second run starts: the share is 1 thread, nothing to compare.
  EXPECT_EQ(plainSteps(tuner, 1, 30, [](int) { return 1.0; }), std::vector<int>(30, 1));
  EXPECT_FALSE(tuner.probing());
  // It ends: the share is 2 again, and the tuner starts from it.
  EXPECT_EQ(tuner.next(2, true), 2);
  EXPECT_TRUE(tuner.probing());
}

// What the tuner relies on: the count it picks is not in the numbers. Runs whose loops are held
// to 1 and to 2 threads (the share, which oneDNN's GEMMs keep, stays 2) end with the same losses,
// gradient norms and weights, bit for bit: a GPT (attention, layer norm, softmax, AdamW) and two
// MLPs, the spirals one's small GEMMs among them (with the GEMMs' own thread count changed
// instead, its gradient norm differs from step 14 and its loss from step 18).
TEST(StepThreadTuner, TheThreadsItPicksDoNotChangeARunsNumbers) {
  auto train = [](std::map<std::string, std::string> keys, int loopThreads) {
    RunConfig c;
    keys["train.threads"] = "0";
    for (const auto& [k, v] : keys) setConfigValue(c, k, v);
    Trainer t(c);
    t.setConcurrentRuns(std::max(1, cpu::availableCpus() / 2));  // a share of 2 where there are 2+
    t.threadTuner().force(loopThreads);
    std::vector<double> numbers;
    while (!t.finished()) {
      const StepMetrics m = t.step();
      numbers.push_back(m.loss);
      numbers.push_back(m.gradNorm);
    }
    for (const Parameter* p : t.model().parameters())
      for (float v : t.backend().toHostFloat(p->value)) numbers.push_back(v);
    return numbers;
  };
  const std::map<std::string, std::string> gpt{
      {"model.name", "gpt"}, {"model.layers", "2"}, {"model.heads", "4"}, {"model.embd", "128"},
      {"model.block", "128"}, {"data.name", "text"}, {"train.batch_size", "8"},
      {"amp.mode", "bf16"}, {"optimizer.name", "adamw"}, {"train.steps", "3"}};
  const std::map<std::string, std::string> mlp{
      {"model.name", "recipe_mlp"}, {"model.width", "512"}, {"data.name", "synthetic"},
      {"data.batches", "4"}, {"train.batch_size", "256"}, {"amp.mode", "fp16"}, {"train.steps", "3"}};
  const std::map<std::string, std::string> spirals{
      {"data.name", "spirals"}, {"data.samples", "1000"}, {"model.name", "mlp"},
      {"model.hidden", "64,64"}, {"model.activation", "tanh"}, {"optimizer.name", "adam"},
      {"optimizer.lr", "0.01"}, {"train.batch_size", "100"}, {"train.steps", "20"},
      {"amp.mode", "fp16"}, {"train.inject_nonfinite", "5,13"}};
  if (cpu::availableCpus() < 2) GTEST_SKIP() << "one CPU: there is no second thread to compare";
  for (const auto& keys : {gpt, mlp, spirals}) {
    const auto one = train(keys, 1), two = train(keys, 2);
    ASSERT_EQ(one.size(), two.size());
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(double)), 0)
        << keys.at("model.name") << ": the numbers differ between loops on 1 and on 2 threads";
  }
}
