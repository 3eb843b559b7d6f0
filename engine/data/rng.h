// A small deterministic random number generator for data generation and shuffling.
//
// Why our own: std::normal_distribution and std::shuffle are implementation-defined, so the
// same seed gives different data on another libstdc++/libc++ version. Everything here is
// specified bit for bit (xoshiro256** seeded by splitmix64, Lemire's unbiased bounded integers,
// polar Box-Muller normals, Fisher-Yates), so a seed names the same data set and the same batch order
// everywhere, and the whole state fits in a few words a checkpoint can store.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/common/mix64.h"

namespace amp {

class Rng {
 public:
  // xoshiro256** words, then the cached second normal of a pair (flag, bits of the double):
  // normal() produces pairs, and a resumed generator must hand out the same second half.
  using State = std::array<std::uint64_t, 6>;

  // Independent streams from one seed: e.g. Rng(seed, 1) for features, Rng(seed, 2) for
  // targets, so changing one part of a recipe does not reshuffle the others.
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0) {
    std::uint64_t sm = mix64(seed) ^ (stream * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL);
    for (auto& w : m_s) w = splitmix64(sm);
    if ((m_s[0] | m_s[1] | m_s[2] | m_s[3]) == 0) m_s[0] = 1;  // all-zero is xoshiro's fixed point
  }

  // 64 uniformly random bits (xoshiro256**, Blackman & Vigna).
  std::uint64_t next() {
    const std::uint64_t result = std::rotl(m_s[1] * 5, 7) * 9;
    const std::uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = std::rotl(m_s[3], 45);
    return result;
  }

  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject). n must be > 0.
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  // Standard normal by Marsaglia's polar form of Box-Muller: no sin/cos, about twice as fast
  // as the trigonometric form (the synthetic recipe draws 26M of these). Pairs are produced;
  // the second value is cached and returned by the next call.
  double normal() {
    if (m_hasSpare) {
      m_hasSpare = false;
      return m_spare;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    m_spare = v * f;
    m_hasSpare = true;
    return u * f;
  }
  double normal(double mean, double stddev) { return mean + stddev * normal(); }

  // Fisher-Yates, from the back (the same order as Python's random.shuffle).
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(below(i));
      std::swap(v[i - 1], v[j]);
    }
  }

  // A random permutation of 0..n-1.
  std::vector<std::int64_t> permutation(std::int64_t n) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(n > 0 ? n : 0));
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int64_t>(i);
    shuffle(p);
    return p;
  }

  State getState() const {
    return {m_s[0], m_s[1], m_s[2], m_s[3], m_hasSpare ? 1u : 0u,
            std::bit_cast<std::uint64_t>(m_spare)};
  }
  void setState(const State& s) {
    if ((s[0] | s[1] | s[2] | s[3]) == 0)
      throw std::invalid_argument("Rng::setState: all-zero xoshiro state is invalid");
    for (int i = 0; i < 4; ++i) m_s[i] = s[i];
    m_hasSpare = s[4] != 0;
    m_spare = std::bit_cast<double>(s[5]);
  }

  friend bool operator==(const Rng& a, const Rng& b) { return a.getState() == b.getState(); }

 private:
  static std::uint64_t splitmix64(std::uint64_t& x) {
    const std::uint64_t r = mix64(x);
    x += 0x9E3779B97F4A7C15ULL;
    return r;
  }

  std::uint64_t m_s[4] = {};
  bool m_hasSpare = false;
  double m_spare = 0.0;
};

}  // namespace amp
