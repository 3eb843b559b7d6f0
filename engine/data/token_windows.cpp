#include "engine/data/token_windows.h"

#include <stdexcept>
#include <string>

namespace amp {

void appendTokenWindow(const Dataset& data, std::int64_t i, std::vector<std::int32_t>& inputs,
                       std::vector<std::int32_t>& labels) {
  const std::int64_t T = data.sequence, start = data.windowStart(i);
  if (start < 0 || start + T + 1 > std::int64_t(data.tokens.size()))
    throw std::out_of_range(data.name + ": window " + std::to_string(i) + " at " +
                            std::to_string(start) + " runs past the " +
                            std::to_string(data.tokens.size()) + " bytes");
  const std::uint8_t* w = data.tokens.data() + start;
  for (std::int64_t t = 0; t < T; ++t) {
    inputs.push_back(w[t]);
    labels.push_back(w[t + 1]);
  }
}

TokenWindows tokenWindows(const Dataset& data, std::int64_t first, std::int64_t n) {
  TokenWindows out;
  out.inputs.reserve(static_cast<std::size_t>(n * data.sequence));
  out.labels.reserve(out.inputs.capacity());
  for (std::int64_t i = first; i < first + n; ++i) appendTokenWindow(data, i, out.inputs, out.labels);
  return out;
}

}  // namespace amp
