#include "engine/train/text_sample.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/data/rng.h"
#include "engine/train/trainer.h"

namespace amp {

std::string sampleText(Trainer& trainer, const TextSampleOptions& o) {
  const RunConfig& c = trainer.config();
  if (c.model.name != "gpt" || o.length <= 0) return {};
  std::vector<std::int32_t> context;
  for (unsigned char ch : o.prompt) context.push_back(ch);
  if (context.empty()) context.push_back('\n');
  Rng rng(o.seed, /*stream=*/0x7e47);
  std::string out;
  for (int i = 0; i < o.length; ++i) {
    const std::size_t keep = std::min<std::size_t>(context.size(), std::size_t(c.model.block));
    const std::vector<std::int32_t> window(context.end() - std::ptrdiff_t(keep), context.end());
    const std::vector<float> logits = trainer.nextTokenLogits(window);
    int next = 0;
    if (o.greedy || o.temperature <= 0) {
      next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    } else {
      // Softmax of logits / temperature in double, then one uniform draw.
      const double mx = *std::max_element(logits.begin(), logits.end());
      std::vector<double> p(logits.size());
      double sum = 0;
      for (std::size_t k = 0; k < p.size(); ++k) sum += p[k] = std::exp((logits[k] - mx) / o.temperature);
      double u = rng.uniform() * sum;
      next = int(p.size()) - 1;
      for (std::size_t k = 0; k < p.size(); ++k)
        if ((u -= p[k]) < 0) {
          next = int(k);
          break;
        }
    }
    context.push_back(next);
    out.push_back(static_cast<char>(next));
  }
  return out;
}

std::string printableSample(const std::string& bytes) {
  std::string s;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b == '\n') {
      s += "⏎";
      ++i;
    } else if (b == '\t') {
      s += ' ';
      ++i;
    } else if (b < 0x20 || b == 0x7f) {
      s += "·";
      ++i;
    } else if (b < 0x80) {
      s += char(b);
      ++i;
    } else {
      // A well-formed UTF-8 sequence is kept whole; anything else becomes one dot per byte.
      const int len = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
      bool ok = len > 0 && i + std::size_t(len) <= bytes.size();
      for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
      if (ok) {
        s.append(bytes, i, std::size_t(len));
        i += std::size_t(len);
      } else {
        s += "·";
        ++i;
      }
    }
  }
  return s;
}

}  // namespace amp
