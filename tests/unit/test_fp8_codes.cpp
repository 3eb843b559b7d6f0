// fp8 / block-scaled operands held as the hardware holds them (engine/backend/quantized_tensor.h,
// kernels/common/quantized_layout.h): the codes and scales quantizeToCodes writes decode to the
// very bits quantizeDequantize gives, with the same statistics, for every scaling, orientation and
// odd shape, specials included; the codes themselves are the formats' (checked by hand); E2M1
// packs two to a byte; the backend ops keep one byte per value and multiply exactly.
#include <gtest/gtest.h>

#include <QJsonArray>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/amp/fp8_context.h"
#include "engine/amp/fp8_quantize.h"
#include "engine/io/fp8_json.h"
#include "engine/backend/backend.h"
#include "kernels/common/mix64.h"

using namespace amp;

namespace {

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// Values over many binades, with zeros, subnormal-sized ones, an outlier and the specials.
std::vector<float> sample(std::int64_t n, bool specials) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t r = mix64(std::uint64_t(i) * 77 + 5);
    const float mag = std::ldexp(1.0f + float(r & 0xFFFF) / 65536.0f, int((r >> 16) % 40) - 30);
    v[std::size_t(i)] = (r >> 40) & 1 ? -mag : mag;
    if (i % 11 == 3) v[std::size_t(i)] = 0.0f;
  }
  v[std::size_t(n / 2)] = 3.0e4f;  // an outlier: one block's (and a per-tensor scale's) problem
  if (specials && n > 20) {
    v[7] = std::numeric_limits<float>::quiet_NaN();
    v[13] = std::numeric_limits<float>::infinity();
    v[19] = -0.0f;
  }
  return v;
}

struct Case {
  const char* name;
  QuantSpec spec;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool along : {false, true}) {
    QuantSpec s;
    s.alongRows = along;
    s.tensorScale = 24.0f;
    out.push_back({"per tensor e4m3", s});
    s.format = MiniFormat::E5M2;
    s.overflow = Overflow::NonSaturating;
    out.push_back({"per tensor e5m2 inf", s});
    for (MxRounding r : {MxRounding::Floor, MxRounding::Ceil, MxRounding::RoundUp}) {
      QuantSpec m;
      m.alongRows = along;
      m.scaling = QuantScaling::Mx;
      m.block = 32;
      m.mxRounding = r;
      out.push_back({"mx", m});
    }
    for (bool square : {false, true})
      for (bool p2 : {false, true}) {
        QuantSpec b;
        b.alongRows = along;
        b.scaling = QuantScaling::Blockwise;
        b.block = 128;
        b.square = square;
        b.powerOfTwo = p2;
        out.push_back({"blockwise", b});
      }
    for (bool had : {false, true})
      for (bool sr : {false, true}) {
        QuantSpec f;
        f.alongRows = along;
        f.scaling = QuantScaling::Nvfp4;
        f.format = MiniFormat::E2M1;
        f.block = 16;
        f.hadamard = had;
        f.hadamardSigns = 0xA5C3;
        f.stochastic = sr;
        f.seed = 1234;
        out.push_back({"nvfp4", f});
      }
  }
  return out;
}

}  // namespace

TEST(Fp8Codes, CodesDecodeToTheDequantisedBitsWithTheSameStatistics) {
  for (const auto& [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 37}, {130, 67}, {33, 161}}) {
    const std::vector<float> x = sample(rows * cols, true);
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                   (c.spec.alongRows ? " along rows" : ""));
      std::vector<float> ref(x.size()), dec(x.size()), both(x.size());
      QuantStats a, b;
      quantizeDequantize(x.data(), ref.data(), rows, cols, c.spec, &a);
      const QuantLayout L{rows, cols, c.spec.alongRows, c.spec.block, c.spec.square};
      std::vector<std::uint8_t> codes(std::size_t(quantCodeBytes(rows * cols, c.spec.format)));
      std::vector<std::uint8_t> scaleCodes(std::size_t(L.blockCount()));
      std::vector<float> factors(std::size_t(L.blockCount()));
      float tensorScale = 0;
      quantizeToCodes(x.data(), rows, cols, c.spec, codes.data(), scaleCodes.data(), factors.data(), &tensorScale, &b,
                      both.data());
      decodeCodes(codes.data(), scaleCodes.data(), factors.data(), tensorScale, rows, cols, c.spec, dec.data());
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(bits(dec[i]), bits(ref[i])) << "element " << i << " of " << x[i];
        ASSERT_EQ(bits(both[i]), bits(ref[i])) << "element " << i;
      }
      EXPECT_EQ(a.count, b.count);
      EXPECT_EQ(a.underflow, b.underflow);
      EXPECT_EQ(a.overflow, b.overflow);
      EXPECT_EQ(a.nonFinite, b.nonFinite);
      EXPECT_EQ(a.errorSq, b.errorSq);
      EXPECT_EQ(a.blockExponents, b.blockExponents);
      EXPECT_EQ(a.scale, b.scale);
    }
  }
}

TEST(Fp8Codes, CodesAreTheFormatsOwnBitsAndE2m1PacksTwoToAByte) {
  // Per tensor E4M3 at scale 2: 1 -> 2.0 = 0x40, -0.25 -> -0.5 = 0xB0, 300 -> 600 saturates to 448 = 0x7E.
  const std::vector<float> x{1.0f, -0.25f, 300.0f};
  QuantSpec s;
  s.tensorScale = 2.0f;
  std::vector<std::uint8_t> codes(3);
  float ts = 0;
  quantizeToCodes(x.data(), 1, 3, s, codes.data(), nullptr, nullptr, &ts, nullptr);
  EXPECT_EQ(codes, (std::vector<std::uint8_t>{0x40, 0xB0, 0x7E}));
  EXPECT_EQ(ts, 2.0f);
  // MX E4M3, round-up-to-fit: amax 6 needs 2^-6 (6 x 64 = 384 <= 448): E8M0 code 127 - 6 = 121.
  QuantSpec m;
  m.scaling = QuantScaling::Mx;
  m.block = 32;
  std::vector<float> y(32, 0.0f);
  y[0] = 6.0f;
  y[1] = 1.0f;  // 64 = 2^6: E4M3 exponent 13, 0x68
  std::vector<std::uint8_t> mc(32), sc(1);
  quantizeToCodes(y.data(), 1, 32, m, mc.data(), sc.data(), nullptr, &ts, nullptr);
  EXPECT_EQ(sc[0], 121);
  EXPECT_EQ(mc[1], 0x68);
  EXPECT_EQ(mc[0], 0x7C);  // 384 = 1.5 x 2^8: exponent 15, mantissa 100
  // NVFP4 without the transform: amax 6 gives S = 448; the block's scale 6/6 x 448 = 448 (E4M3
  // 0x7E), so 6 -> 6 x 448 / 448 = 6 (E2M1 0x7) and -0.5 -> 0x9 (sign 8 | 1); packed low first.
  QuantSpec f;
  f.scaling = QuantScaling::Nvfp4;
  f.format = MiniFormat::E2M1;
  f.block = 16;
  std::vector<float> z{6.0f, -0.5f, 1.5f};
  std::vector<std::uint8_t> fc(2), fs(1);
  quantizeToCodes(z.data(), 1, 3, f, fc.data(), fs.data(), nullptr, &ts, nullptr);
  EXPECT_EQ(ts, 448.0f);
  EXPECT_EQ(fs[0], 0x7E);
  EXPECT_EQ(fc[0], 0x97);  // 6 (0x7) low, -0.5 (0x9) high
  EXPECT_EQ(fc[1], 0x03);  // 1.5 (0x3), the odd last value alone in its byte
  // Blockwise stores the dequantisation factor 1 / s, s = 448 / amax.
  QuantSpec b;
  b.scaling = QuantScaling::Blockwise;
  b.block = 128;
  std::vector<float> w{7.0f, 1.0f};
  std::vector<std::uint8_t> bc(2);
  std::vector<float> bf(1);
  quantizeToCodes(w.data(), 1, 2, b, bc.data(), nullptr, bf.data(), &ts, nullptr);
  EXPECT_EQ(bf[0], 1.0f / (448.0f / 7.0f));
}

TEST(Fp8Codes, BackendOperandsTakeOneByteAValueAndMultiplyExactly) {
  auto be = makeCpuBackend();
  const std::int64_t m = 5, k = 64, n = 3;
  const std::vector<float> av = sample(m * k, false), bv = sample(n * k, false);
  const Tensor a = be->fromHost(av, {m, k}, DType::BF16, MemCategory::Activations);
  const Tensor b = be->fromHost(bv, {n, k}, DType::F32, MemCategory::Weights);
  for (const Case& c : cases()) {
    if (c.spec.alongRows) continue;  // both operands reduce along their rows here
    if (c.spec.overflow == Overflow::NonSaturating) continue;  // the outlier x 24 is E5M2's inf
    SCOPED_TRACE(c.name);
    QuantizedTensor qa, qb;
    be->quantize(a, k, c.spec, qa, MemCategory::Activations);
    be->quantize(b, k, c.spec, qb, MemCategory::Weights);
    EXPECT_EQ(qa.codes.dtype(), DType::U8);
    EXPECT_EQ(qa.codes.bytes(), std::size_t(c.spec.format == MiniFormat::E2M1 ? m * k / 2 : m * k));
    EXPECT_EQ(qa.codes.category(), MemCategory::Activations);
    EXPECT_EQ(qb.codes.category(), MemCategory::Weights);
    // The decoded operands, and their product in double: the fp32 sum of k exact products can
    // differ from it by at most k rounding errors of the partial sums, k u sum|a||b|.
    Tensor da = be->empty({m, k}, DType::F32, MemCategory::Workspace), db = be->empty({n, k}, DType::F32, MemCategory::Workspace);
    be->dequantize(qa, da);
    be->dequantize(qb, db);
    const std::vector<float> ha = be->toHostFloat(da), hb = be->toHostFloat(db);
    Tensor cq = be->empty({m, n}, DType::F32, MemCategory::Activations);
    be->gemmQuantized(qa, false, qb, true, cq);
    const std::vector<float> hc = be->toHostFloat(cq);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double exact = 0, absSum = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          exact += double(ha[std::size_t(i * k + p)]) * hb[std::size_t(j * k + p)];
          absSum += std::fabs(double(ha[std::size_t(i * k + p)]) * hb[std::size_t(j * k + p)]);
        }
        EXPECT_LE(std::fabs(hc[std::size_t(i * n + j)] - exact), double(k) * 0x1p-24 * absSum) << i << "," << j;
      }
  }
}

TEST(Fp8Codes, TheExactEncoderGivesEveryCodeBack) {
  for (MiniFormat f : {MiniFormat::E4M3, MiniFormat::E5M2, MiniFormat::E3M2, MiniFormat::E2M3, MiniFormat::E2M1}) {
    const std::uint32_t codes = 1u << miniBits(f);
    for (std::uint32_t c = 0; c < codes; ++c) {
      const float v = miniToFloat(c, f);
      // NaN codes come back as the format's NaN of that sign (E5M2 has several: any NaN is one).
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(miniToFloat(miniCodeOfExact(v, f), f))) << int(f) << " code " << c;
        continue;
      }
      EXPECT_EQ(miniCodeOfExact(v, f), c) << int(f) << " code " << c << " = " << v;
      EXPECT_EQ(miniCodeOfExact(v, f), floatToMini(v, f, Overflow::NonSaturating)) << int(f) << " code " << c;
    }
  }
}

TEST(Fp8Codes, HistogramStepsSeeTheTensorAsTheFormatReceivesIt) {
  // Per tensor at scale 16: 1 -> 16 (2^4), 3 -> 48 (2^5), 0.01 -> 0.16 (2^-3); zeros not binned.
  const std::vector<float> x{1.0f, 3.0f, 0.01f, 0.0f};
  std::vector<float> out(x.size());
  QuantSpec s;
  s.tensorScale = 16.0f;
  QuantStats st;
  st.wantScaledExponents = true;
  quantizeDequantize(x.data(), out.data(), 1, 4, s, &st);
  EXPECT_EQ(st.scaledExponents, (std::map<int, std::int64_t>{{-3, 1}, {4, 1}, {5, 1}}));
  QuantStats plain;
  quantizeDequantize(x.data(), out.data(), 1, 4, s, &plain);
  EXPECT_TRUE(plain.scaledExponents.empty()) << "only when asked (histogram steps)";
  // MX, round up to fit: the block {6, 1, 2^-20} takes 2^-6, so 384 (2^8), 64 (2^6), 2^-14.
  QuantSpec m;
  m.scaling = QuantScaling::Mx;
  m.block = 32;
  std::vector<float> y(32, 0.0f);
  y[0] = 6.0f;
  y[1] = 1.0f;
  y[2] = 0x1p-20f;
  std::vector<float> yo(32);
  QuantStats ms;
  ms.wantScaledExponents = true;
  quantizeDequantize(y.data(), yo.data(), 1, 32, m, &ms);
  EXPECT_EQ(ms.scaledExponents, (std::map<int, std::int64_t>{{-14, 1}, {6, 1}, {8, 1}}));
}

TEST(Fp8Codes, TheRecipeRecordsTheScaledHistogramOnHistogramStepsOnAnyBackendPath) {
  Fp8Config c;
  c.recipe = "current";
  c.keepBf16 = "none";
  auto be = makeCpuBackend();
  const std::vector<float> v{2.0f, 0.5f, 0.0f, -1.0f};
  const Tensor x = be->fromHost(v, {1, 4}, DType::F32, MemCategory::Activations);
  for (bool histogramStep : {false, true}) {
    Fp8Context f8(c, 1);
    f8.beginStep(1, histogramStep);
    QuantizedTensor q;
    f8.quantize(*be, "fc", Fp8Role::Input, Fp8Gemm::Forward, x, 4, q, MemCategory::Activations, true);
    const auto r = f8.takeRecords();
    ASSERT_EQ(r.size(), 1u);
    if (!histogramStep) {
      EXPECT_TRUE(r[0].scaledExponents.empty());
      continue;
    }
    // Current scaling: 448 / 2 = 224, so 448 (2^8), 112 (2^6), 224 (2^7); the zero is not binned.
    EXPECT_EQ(r[0].scale, 224.0);
    EXPECT_EQ(r[0].scaledExponents, (std::map<int, std::int64_t>{{6, 1}, {7, 1}, {8, 1}}));
    const auto back = fp8RecordsFromJson(fp8RecordsToJson(r));
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].scaledExponents, r[0].scaledExponents);
  }
}
