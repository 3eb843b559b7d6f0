// nvfp4's weight-gradient operands quantised twice from the same values, without and with the
// 16x16 random Hadamard transform (Fp8TensorRecord::hasWgradRht; the fp4 lesson's verdict rests
// on them). The forward's and the input gradient's records never see the transform, so before
// these figures the lesson compared numbers the transform had not touched.
//
// Reference, by hand: a column block of 16 (the weight gradient reduces down x's columns) holding
// one 1.0 and fifteen values of +-0.01. Without the transform its E4M3 block scale maps the 1.0
// to E2M1's 6, so 0.01 lands at 0.06, below half of E2M1's smallest step (0.5): fifteen of the
// sixteen flush to zero. The transform mixes the block: every output is (+-1 +- fifteen
// +-0.01) / 4, between 0.2125 and 0.2875 in magnitude, so none flushes; but the 1.0's energy is
// now carried at 4 bits in all sixteen, so the SQNR falls (the trade the lesson shows).
#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonObject>
#include <cmath>
#include <string>
#include <vector>

#include "engine/amp/fp8_context.h"
#include "engine/backend/backend.h"
#include "engine/io/fp8_json.h"

using namespace amp;

namespace {

constexpr std::int64_t kRows = 32, kCols = 16;  // x: 32 samples (the GEMM's K) x 16 features

// Rows 0 and 16 (one per column block) hold 1.0, every other value +-0.01.
std::vector<float> oneOutlierPerBlock() {
  std::vector<float> v(kRows * kCols);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kCols; ++c)
      v[r * kCols + c] = r % 16 == 0 ? 1.0f : ((r + c) % 2 ? 0.01f : -0.01f);
  return v;
}

std::vector<Fp8TensorRecord> quantiseOnce(const char* recipe, Fp8Role role, bool histogramStep) {
  auto be = makeCpuBackend();
  const Tensor x = be->fromHost(oneOutlierPerBlock(), {kRows, kCols}, DType::F32, MemCategory::Activations);
  Fp8Config c;
  c.recipe = recipe;
  c.keepBf16 = "none";
  c.stochasticRounding = false;  // round to nearest: the hand-computed flushes are exact
  Fp8Context f8(c, 1);
  f8.beginStep(1, histogramStep);
  QuantizedTensor q;
  const Fp8Gemm gemm = role == Fp8Role::GradOutput ? Fp8Gemm::Dgrad : Fp8Gemm::Forward;
  f8.quantize(*be, "fc", role, gemm, x, kCols, q, MemCategory::Activations, true);
  return f8.takeRecords();
}

}  // namespace

TEST(Fp4SameTensor, TheTransformKeepsTheSmallValuesAndCostsTheOutliersPrecision) {
  for (Fp8Role role : {Fp8Role::Input, Fp8Role::GradOutput}) {
    SCOPED_TRACE(role == Fp8Role::Input ? "x" : "dy");
    const auto r = quantiseOnce("nvfp4", role, true);
    ASSERT_EQ(r.size(), 1u);
    ASSERT_TRUE(r[0].hasWgradRht);
    EXPECT_DOUBLE_EQ(r[0].wgradPlainUnderflow, 15.0 / 16.0);
    EXPECT_DOUBLE_EQ(r[0].wgradRhtUnderflow, 0.0);
    // Without: only the flushed values' energy is lost, 15 x 1e-4 against 1 + 15 x 1e-4 per block.
    EXPECT_NEAR(r[0].wgradPlainSqnrDb, 10 * std::log10(1.0015 / 0.0015), 0.05);
    EXPECT_LT(r[0].wgradRhtSqnrDb, r[0].wgradPlainSqnrDb - 3);
    // The forward's (blocks along rows: each row is one value repeated) is another quantisation.
    if (role == Fp8Role::Input) EXPECT_EQ(r[0].underflow, 0.0);
  }
}

TEST(Fp4SameTensor, OnlyNvfp4HistogramStepsOfTheWeightGradientsOperandsMeasureIt) {
  EXPECT_FALSE(quantiseOnce("nvfp4", Fp8Role::Input, false).at(0).hasWgradRht);  // not a histogram step
  EXPECT_FALSE(quantiseOnce("nvfp4", Fp8Role::Weight, true).at(0).hasWgradRht);  // w: no transform
  for (const char* recipe : {"current", "mxfp8", "blockwise"})
    EXPECT_FALSE(quantiseOnce(recipe, Fp8Role::Input, true).at(0).hasWgradRht) << recipe;
}

TEST(Fp4SameTensor, TheFp8JsonKeepsTheFiguresAndReadsLinesWithoutThem) {
  Fp8TensorRecord r;
  r.tensor = "lm_head.dy";
  r.format = "e2m1";
  r.hasWgradRht = true;
  r.wgradPlainSqnrDb = 21.25;
  r.wgradPlainUnderflow = 0.0813;
  r.wgradRhtSqnrDb = std::numeric_limits<double>::infinity();  // exact: written as a string, read back
  r.wgradRhtUnderflow = 0.0639;
  const QJsonArray json = fp8RecordsToJson({r});
  const Fp8TensorRecord back = fp8RecordsFromJson(json).at(0);
  EXPECT_TRUE(back.hasWgradRht);
  EXPECT_DOUBLE_EQ(back.wgradPlainSqnrDb, 21.25);
  EXPECT_DOUBLE_EQ(back.wgradPlainUnderflow, 0.0813);
  EXPECT_TRUE(std::isinf(back.wgradRhtSqnrDb));
  EXPECT_DOUBLE_EQ(back.wgradRhtUnderflow, 0.0639);
  QJsonObject old = json.at(0).toObject();
  for (const char* k : {"wgrad_plain_sqnr_db", "wgrad_plain_underflow", "wgrad_rht_sqnr_db", "wgrad_rht_underflow"})
    old.remove(k);
  EXPECT_FALSE(fp8RecordsFromJson(QJsonArray{old}).at(0).hasWgradRht);
}
