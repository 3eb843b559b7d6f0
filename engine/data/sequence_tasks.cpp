// Generation of the sequence tasks. Every draw comes from amp::Rng, so a seed names the same
// stream of examples on every platform.
#include "engine/data/sequence_tasks.h"

#include <algorithm>
#include <cmath>

#include "engine/data/text_dataset.h"

namespace amp {
namespace {

// Independent streams for the two splits: the test examples are not a slice of the training ones.
constexpr std::uint64_t kTaskTrainStream = 0x5E07A;
constexpr std::uint64_t kTaskTestStream = 0x5E07B;

constexpr std::string_view kPromptAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz";

std::string randomPrompt(Rng& rng) {
  const auto length = static_cast<std::size_t>(1 + rng.below(kMaxTaskPrompt));
  std::string s(length, ' ');
  for (char& c : s) c = kPromptAlphabet[rng.below(kPromptAlphabet.size())];
  return s;
}

// 1 to 3 digits, each digit count equally likely (a uniform 0..999 would almost always give
// three-digit numbers), without leading zeros.
std::int64_t randomNumber(Rng& rng) {
  const auto digits = static_cast<int>(1 + rng.below(3));
  if (digits == 1) return static_cast<std::int64_t>(rng.below(10));
  const std::int64_t low = digits == 2 ? 10 : 100;
  return low + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(9 * low)));
}

std::string str(std::int64_t v) { return std::to_string(v); }

}  // namespace

bool isSequenceTask(std::string_view name) {
  return name == "copy" || name == "reverse" || name == "sort" || name == "add";
}

std::string sequenceTaskExample(std::string_view task, Rng& rng) {
  if (task == "add") {
    const std::int64_t a = randomNumber(rng), b = randomNumber(rng);
    return str(a) + "+" + str(b) + "=" + str(a + b) + "\n";
  }
  const std::string prompt = randomPrompt(rng);
  std::string answer = prompt;
  if (task == "reverse") std::reverse(answer.begin(), answer.end());
  else if (task == "sort") std::sort(answer.begin(), answer.end());
  else if (task != "copy") throw DataError("data.name = '" + std::string(task) + "': not a sequence task");
  return prompt + "|" + answer + "\n";
}

std::vector<std::uint8_t> sequenceTaskStream(std::string_view task, std::int64_t examples, std::uint64_t seed,
                                             std::uint64_t stream) {
  Rng rng(seed, stream);
  std::vector<std::uint8_t> bytes;
  bytes.reserve(static_cast<std::size_t>(std::max<std::int64_t>(examples, 0)) * 12);
  for (std::int64_t i = 0; i < examples; ++i) {
    const std::string line = sequenceTaskExample(task, rng);
    bytes.insert(bytes.end(), line.begin(), line.end());
  }
  return bytes;
}

DataSplit makeSequenceTask(const DataOptions& opt) {
  if (!isSequenceTask(opt.name)) throw DataError("data.name = '" + opt.name + "': not a sequence task");
  if (opt.sequence <= 0)
    throw DataError("model.block = " + str(opt.sequence) + ": data.name=" + opt.name +
                    " needs a context of at least 1 byte (each window holds model.block + 1)");
  const std::int64_t total = opt.samples > 0 ? opt.samples : kDefaultTaskExamples;
  if (total > kMaxTaskExamples)
    throw DataError("data.samples = " + str(total) + ": at most " + str(kMaxTaskExamples) + " examples for data.name=" +
                    opt.name);
  const auto testExamples = static_cast<std::int64_t>(std::llround(static_cast<double>(total) * opt.testFraction));
  const std::int64_t trainExamples = total - testExamples;
  const std::int64_t window = opt.sequence + 1;
  // A stream shorter than one window has nothing to offer; the message says what to change.
  auto refuseShort = [&](const std::vector<std::uint8_t>& s, std::int64_t examples, const char* split) {
    if (static_cast<std::int64_t>(s.size()) < window)
      throw DataError("data.samples = " + str(total) + ": the " + str(examples) + " " + split + " examples of " +
                      opt.name + " make " + str(static_cast<std::int64_t>(s.size())) +
                      " bytes, fewer than one window of model.block + 1 = " + str(window) + " (raise data.samples)");
  };
  std::vector<std::uint8_t> train = sequenceTaskStream(opt.name, trainExamples, opt.seed, kTaskTrainStream);
  refuseShort(train, trainExamples, "training");
  DataSplit split;
  split.train = everyWindow(std::move(train), opt.sequence, opt.name + "/train");
  if (testExamples == 0) {
    // data.test_fraction = 0: no test windows, but the split has the training split's shape, so
    // code that evaluates can skip it uniformly (as the synthetic recipe's empty test split).
    split.test.name = opt.name + "/test";
    split.test.sampleShape = split.train.sampleShape;
    split.test.sequence = opt.sequence;
    split.test.numClasses = split.train.numClasses;
    return split;
  }
  std::vector<std::uint8_t> test = sequenceTaskStream(opt.name, testExamples, opt.seed, kTaskTestStream);
  refuseShort(test, testExamples, "test");
  split.test = validationWindows(std::move(test), opt.sequence, opt.name + "/test");
  return split;
}

}  // namespace amp
