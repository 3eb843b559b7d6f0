// The two-workers lesson (engine/config/presets.cpp) keeps its word: its 1_rank variant has the
// overflows on its one rank and its 2_ranks variant on rank 1, whatever the base config says
// about dist.inject_rank. The app applies a lesson's variants over the Experiment panel's settings
// (MainWindow::lessonConfigs); a panel left at "Inject on rank" 1 made the 1-rank run inject on a
// rank it does not have: no overflow at all, silently (issue 40, "Ranks and runs").
#include <gtest/gtest.h>

#include "engine/config/config_schema.h"
#include "engine/config/presets.h"

using namespace amp;

namespace {

// As the app builds a lesson's runs: the panel's config, then each variant's overrides.
RunConfig variantOver(RunConfig base, const PresetVariant& v) {
  for (const auto& [k, val] : v.overrides) setConfigValue(base, k, val);
  return base;
}

const PresetVariant& variant(const Preset& p, const std::string& label) {
  for (const auto& v : p.variants)
    if (v.label == label) return v;
  ADD_FAILURE() << "no variant " << label;
  return p.variants.front();
}

}  // namespace

TEST(TwoWorkersPreset, EachVariantInjectsOnARankItHas) {
  const Preset* p = findPreset("two-workers");
  ASSERT_NE(p, nullptr);
  for (const char* panelInject : {"-1", "0", "1"}) {
    RunConfig panel = presetConfig(*p);
    setConfigValue(panel, "dist.ranks", "2");
    setConfigValue(panel, "dist.inject_rank", panelInject);
    const RunConfig one = variantOver(panel, variant(*p, "1_rank"));
    EXPECT_EQ(one.dist.ranks, 1);
    EXPECT_EQ(one.dist.injectRank, -1) << "panel dist.inject_rank=" << panelInject
                                       << ": the 1-rank run must inject on its one rank";
    const RunConfig two = variantOver(panel, variant(*p, "2_ranks"));
    EXPECT_EQ(two.dist.ranks, 2);
    EXPECT_EQ(two.dist.injectRank, 1);
    EXPECT_EQ(one.train.injectNonFinite, two.train.injectNonFinite);
    EXPECT_FALSE(one.train.injectNonFinite.empty());
  }
}

TEST(TwoWorkersPreset, TheCliVariantsToo) {
  const Preset* p = findPreset("two-workers");
  ASSERT_NE(p, nullptr);
  const RunConfig one = presetConfig(*p, &variant(*p, "1_rank"));
  EXPECT_EQ(one.dist.ranks, 1);
  EXPECT_EQ(one.dist.injectRank, -1);
  EXPECT_FALSE(validateRunConfig(one).has_value());
}
