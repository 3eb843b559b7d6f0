// Shared by the GPU tests: a fixture holding the CPU backend (the reference) and the CUDA
// backend, which skips with the registry's reason when no GPU is usable, and helpers to put the
// same values on both and compare them bit for bit or within a stated bound.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend_registry.h"

namespace amp::gpu_test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr DType kFloats[] = {DType::F32, DType::F16, DType::BF16};
inline std::string name(DType d) { return std::string(dtypeName(d)); }

// |b - a| <= abs + rel * |a| element-wise (a: the CPU's values, the reference). NaN matches only
// NaN and an infinity only the same infinity; a finite value never matches a non-finite one.
inline void expectCloseValues(const std::vector<float>& a, const std::vector<float>& b, double abs,
                              double rel, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < a.size() && reported < 5; ++i) {
    const bool ok = std::isnan(a[i]) || std::isnan(b[i]) || std::isinf(a[i]) || std::isinf(b[i])
                        ? (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]
                        : a[i] == b[i] || std::fabs(double(a[i]) - b[i]) <= abs + rel * std::fabs(double(a[i]));
    if (!ok) {
      ADD_FAILURE() << what << " [" << i << "]: cpu " << a[i] << " cuda " << b[i];
      ++reported;
    }
  }
}

// What a NaN may look like. IEEE 754 leaves a NaN's sign and payload open, and so do PyTorch
// and we: the CPU's arithmetic gives the default quiet NaN (0x7fc00000, fp16 0x7e00, bf16
// 0x7fc0), CUDA's 0x7fffffff / 0x7fff, and a NaN carried through a cast keeps what it had. So a
// NaN matches any NaN, and every other element must match bit for bit.
inline bool isNaNElement(DType d, const std::uint8_t* p) {
  if (d == DType::F32) {
    std::uint32_t u;
    std::memcpy(&u, p, 4);
    return (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (d == DType::F16) return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0;
  if (d == DType::BF16) return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0;
  return false;  // integers and bytes have no NaN
}

inline std::size_t elementBytes(DType d) {
  return d == DType::F32 || d == DType::I32 ? 4 : d == DType::U8 ? 1 : 2;
}

// Element by element, bit for bit, except that NaN matches NaN (above); reports the first
// five differences with both bit patterns.
inline void expectSameElements(DType d, const std::vector<std::uint8_t>& a,
                               const std::vector<std::uint8_t>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  const std::size_t w = elementBytes(d);
  int reported = 0;
  for (std::size_t off = 0; off + w <= a.size(); off += w) {
    if (std::memcmp(&a[off], &b[off], w) == 0) continue;
    if (isNaNElement(d, &a[off]) && isNaNElement(d, &b[off])) continue;
    if (reported++ >= 5) continue;
    std::uint32_t x = 0, y = 0;
    std::memcpy(&x, &a[off], w);
    std::memcpy(&y, &b[off], w);
    char hex[64];
    std::snprintf(hex, sizeof hex, "0x%0*x vs 0x%0*x", int(2 * w), x, int(2 * w), y);
    ADD_FAILURE() << what << ": bytes differ at element " << off / w << " (cpu vs cuda " << hex
                  << ")";
  }
}

// Two statistics that must agree exactly, where both may be NaN (a NaN gradient's sum of
// squares): NaN == NaN is false, so EXPECT_EQ cannot say it.
inline void expectSameOrBothNaN(double cpuValue, double cudaValue, const std::string& what) {
  if (std::isnan(cpuValue) && std::isnan(cudaValue)) return;
  EXPECT_EQ(cpuValue, cudaValue) << what;
}

// Skips the calling test (GTEST_SKIP needs a void function) when no GPU is usable here.
#define AMP_SKIP_WITHOUT_GPU()                                                        \
  do {                                                                               \
    if (!::amp::gpuInventory().usable())                                             \
      GTEST_SKIP() << "no usable GPU: " << ::amp::gpuInventory().unavailableReason;  \
  } while (0)

class CpuAndCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    AMP_SKIP_WITHOUT_GPU();
    cpu = makeBackend("cpu");
    cuda = makeBackend("cuda");
  }

  // The same host values, rounded into `dtype`, on both backends.
  struct Pair {
    Tensor c, g;  // on the CPU, on the GPU
  };
  Pair both(const std::vector<float>& v, const Shape& shape, DType dtype,
            MemCategory cat = MemCategory::Workspace) {
    return {cpu->fromHost(v, shape, dtype, cat), cuda->fromHost(v, shape, dtype, cat)};
  }
  Pair emptyBoth(const Shape& shape, DType dtype) {
    return {cpu->empty(shape, dtype, MemCategory::Workspace),
            cuda->empty(shape, dtype, MemCategory::Workspace)};
  }
  // Bit for bit, NaN matching any NaN (isNaNElement).
  void expectSameBits(const Pair& p, const std::string& what) {
    ASSERT_EQ(p.c.dtype(), p.g.dtype()) << what;
    expectSameElements(p.c.dtype(), cpu->toHostBytes(p.c), cuda->toHostBytes(p.g), what);
  }
  // Element-wise |gpu - cpu| <= abs + rel * |cpu|. Non-finite values must agree exactly: NaN
  // only with NaN, an infinity only with the same infinity (rel * inf would pass anything).
  void expectClose(const Pair& p, double abs, double rel, const std::string& what) {
    expectCloseValues(cpu->toHostFloat(p.c), cuda->toHostFloat(p.g), abs, rel, what);
  }

  std::unique_ptr<Backend> cpu, cuda;
};

// Values that exercise rounding: random normals over many binades, plus the specials.
inline std::vector<float> testValues(std::size_t n, std::uint32_t seed, float spread = 8.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> expo(-spread, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng) * std::exp2(expo(rng));
  const float specials[] = {0.f, -0.f, kInf, -kInf, kNaN, 65504.f, 65519.f, 65520.f, -65536.f,
                            5.9604645e-8f, 2.98e-8f, 6.1035156e-5f, 1e-30f, 3.3895314e38f,
                            1.f + 1.f / 4096, 1.f + 3.f / 4096, 1.f / 3.f};
  for (std::size_t i = 0; i < std::size(specials) && i < n; ++i) v[i * 7 % n] = specials[i];
  return v;
}

inline std::vector<float> finiteValues(std::size_t n, std::uint32_t seed, float spread = 4.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> expo(-spread, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng) * std::exp2(expo(rng));
  return v;
}

}  // namespace amp::gpu_test
