// Synthetic sequence tasks (data.name = copy | reverse | sort | add): byte-level training data
// that needs no corpus and that a small transformer learns in seconds on a CPU, for live demos.
// Each example is one line, a prompt, a separator and the answer:
//   copy     "ab3d|ab3d\n"     the prompt again
//   reverse  "ab3d|d3ba\n"     the prompt backwards
//   sort     "db3a|3abd\n"     the prompt's bytes in ascending order
//   add      "123+45=168\n"    the decimal sum of two numbers of 1 to 3 digits
// Prompts are 1 to kMaxTaskPrompt characters of [0-9a-z]. The examples are concatenated into one
// byte stream and cut into windows exactly as data.name=text is (text_dataset.h): the training
// stream offers every offset, the test stream (drawn from its own seed stream) the 64 fixed,
// evenly spaced windows. The model cannot predict a random prompt, so the loss levels off above
// zero; what it learns is the answer after the separator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/rng.h"

namespace amp {

inline constexpr std::int64_t kDefaultTaskExamples = 20000;  // data.samples = 0
// About 20 bytes an example at most: 10 million examples are 200 MB of stream.
inline constexpr std::int64_t kMaxTaskExamples = 10'000'000;
inline constexpr int kMaxTaskPrompt = 8;

bool isSequenceTask(std::string_view name);

// One example line of `task` (copy, reverse, sort or add) drawn from `rng`.
std::string sequenceTaskExample(std::string_view task, Rng& rng);

// `examples` example lines of `task` drawn from Rng(seed, stream), concatenated.
std::vector<std::uint8_t> sequenceTaskStream(std::string_view task, std::int64_t examples, std::uint64_t seed,
                                             std::uint64_t stream);

// opt.name a task: opt.samples examples (0 = kDefaultTaskExamples), round(samples *
// opt.testFraction) of them for testing from an independent stream (none: an empty test split of
// the same shape), windows of opt.sequence + 1 bytes. Throws DataError when a split's stream is
// shorter than one window (naming data.samples) or opt.sequence <= 0.
DataSplit makeSequenceTask(const DataOptions& opt);

}  // namespace amp
