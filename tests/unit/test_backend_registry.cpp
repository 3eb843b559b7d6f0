// The backend registry: the CPU always; the GPUs listed, or one line saying why none is usable
// (checked here on machines without a GPU: no driver, driver too old, no device, or a build
// without CUDA), and every way of asking for the CUDA backend then fails with that line.
#include <gtest/gtest.h>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/train/trainer.h"

using namespace amp;

TEST(BackendRegistry, CpuAlwaysExists) {
  auto be = makeBackend("cpu");
  ASSERT_TRUE(be);
  EXPECT_EQ(be->name(), "cpu");
  EXPECT_THROW(makeBackend("tpu"), std::runtime_error);
}

TEST(BackendRegistry, InventoryListsDevicesOrSaysWhyNone) {
  const GpuInventory& inv = gpuInventory();
  const auto lines = inv.describe();
  ASSERT_FALSE(lines.empty());
  if (inv.usable()) {
    EXPECT_TRUE(inv.unavailableReason.empty());
    EXPECT_EQ(lines.size(), inv.devices.size() + 1);  // the devices, then the driver line
    EXPECT_NE(lines.front().find("sm_"), std::string::npos) << lines.front();
    EXPECT_EQ(resolveBackendName("auto"), "cuda");
    return;
  }
  // One line, with a reason a user can act on.
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_FALSE(inv.unavailableReason.empty());
  EXPECT_EQ(inv.unavailableReason.find('\n'), std::string::npos);
  EXPECT_NE(lines[0].find(inv.unavailableReason), std::string::npos);
  if (inv.built) {
    // The backend is here (linked in, or its plugin loaded): the runtime's error decides
    // (cudaGetDeviceCount leaves the count alone on error 35).
    const bool known = inv.unavailableReason.find("driver") != std::string::npos ||
                       inv.unavailableReason.find("device") != std::string::npos ||
                       inv.unavailableReason.find("compute capability") != std::string::npos ||
                       inv.unavailableReason.find("CUDA reports") != std::string::npos;
    EXPECT_TRUE(known) << inv.unavailableReason;
  } else {
    // No backend: a build without CUDA, or a plugin that is missing or cannot load.
    EXPECT_NE(inv.unavailableReason.find("CUDA backend"), std::string::npos) << inv.unavailableReason;
  }
#if defined(AMP_HAVE_CUDA)
  EXPECT_TRUE(inv.built);  // linked in: never "not installed"
#endif
  EXPECT_EQ(resolveBackendName("auto"), "cpu");
  auto be = makeBackend("auto");
  EXPECT_EQ(be->name(), "cpu");
}

TEST(BackendRegistry, AskingForCudaWithoutAGpuFailsInOneLine) {
  if (gpuInventory().usable()) GTEST_SKIP() << "a GPU is usable here";
  try {
    makeBackend("cuda");
    FAIL() << "makeBackend(cuda) succeeded without a usable GPU";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(gpuInventory().unavailableReason), std::string::npos);
  }
  RunConfig c;
  setConfigValue(c, "backend", "cuda");
  setConfigValue(c, "model.width", "16");
  setConfigValue(c, "train.steps", "1");
  try {
    Trainer t(c);
    FAIL() << "a trainer was built on a CUDA backend without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("backend: ", 0), 0u) << e.what();
  }
}

TEST(BackendRegistry, ConfigKeysAcceptAutoAndTf32) {
  RunConfig c;
  EXPECT_EQ(c.backend, "auto");
  setConfigValue(c, "backend", "cpu");
  setConfigValue(c, "tf32", "true");
  EXPECT_TRUE(c.tf32);
  EXPECT_THROW(setConfigValue(c, "backend", "gpu"), ConfigError);
}
