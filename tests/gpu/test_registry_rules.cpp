// The registry's decisions that need no GPU, checked here on the CPU: which devices this build
// has code for (missingArchitectureReason), and what a lost GPU context does to the inventory
// and to the backend choice (withGpuContextLost, markGpuContextLost).
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "engine/backend/backend_registry.h"

using namespace amp;

TEST(RegistryRules, TheDefaultArchitectureListRunsOnTuringAndEverythingLater) {
  const std::string list = "75 80 86 89 90";
  for (auto [major, minor] : {std::pair{7, 5}, {8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0}, {10, 0}, {12, 0}})
    EXPECT_EQ(missingArchitectureReason(major, minor, list), "") << major << "." << minor;
  EXPECT_EQ(missingArchitectureReason(8, 6, "75;80;86;89;90"), "");  // CMake's list form
}

TEST(RegistryRules, ADeviceWithoutCodeIsRefusedWithTheRebuild) {
  // sm_90 code (cubin + PTX) cannot run on an sm_86 device.
  const std::string why = missingArchitectureReason(8, 6, "90");
  EXPECT_NE(why.find("this build has no code for sm_86"), std::string::npos) << why;
  EXPECT_NE(why.find("-DCMAKE_CUDA_ARCHITECTURES=86"), std::string::npos) << why;
  EXPECT_NE(why.find("sm_90"), std::string::npos) << why;
  // A cubin runs on later minors of its major only; PTX on any later device.
  EXPECT_EQ(missingArchitectureReason(8, 9, "86-real"), "");
  EXPECT_NE(missingArchitectureReason(9, 0, "86-real"), "");
  EXPECT_EQ(missingArchitectureReason(9, 0, "86-virtual"), "");
  EXPECT_NE(missingArchitectureReason(8, 0, "86-virtual"), "");
  EXPECT_EQ(missingArchitectureReason(12, 0, "80"), "");  // compute_80 PTX, JIT-compiled
  // Architecture-specific code (sm_90a) runs on that device only.
  EXPECT_EQ(missingArchitectureReason(9, 0, "90a"), "");
  EXPECT_NE(missingArchitectureReason(10, 0, "90a-real"), "");
  EXPECT_NE(missingArchitectureReason(10, 0, "90a"), "");
  // Lists this function cannot judge are trusted.
  for (const char* open : {"all", "all-major", "native", ""})
    EXPECT_EQ(missingArchitectureReason(7, 5, open), "") << open;
}

TEST(RegistryRules, ALostContextLeavesNoUsableDeviceAndSaysToRestart) {
  GpuInventory inv;
  inv.built = true;
  inv.devices.push_back({0, "NVIDIA H100", 9, 0, std::int64_t(80) << 30});
  const GpuInventory lost =
      withGpuContextLost(inv, "CUDA sgd step: an illegal memory access was encountered");
  EXPECT_FALSE(lost.usable());
  EXPECT_NE(lost.unavailableReason.find("illegal memory access"), std::string::npos);
  EXPECT_NE(lost.unavailableReason.find("the GPU context is lost; restart AMP Studio"), std::string::npos);
  // The first loss is the one reported.
  EXPECT_EQ(withGpuContextLost(lost, "later").unavailableReason, lost.unavailableReason);
}

// The process-wide effect, in a child process (it marks this process's inventory): auto picks
// the CPU and cuda refuses in one line naming the loss.
TEST(RegistryRules, MarkingTheContextLostTurnsAutoToTheCpu) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no CUDA state inherited
  EXPECT_EXIT(
      {
        markGpuContextLost("CUDA gemm: unspecified launch failure");
        bool ok = !gpuInventory().usable() && resolveBackendName("auto") == "cpu" &&
                  makeBackend("auto")->name() == "cpu";
        if (gpuInventory().built) {
          ok = ok && gpuInventory().unavailableReason.find("context is lost") != std::string::npos;
          try {
            makeBackend("cuda");
            ok = false;
          } catch (const std::runtime_error& e) {
            ok = ok && std::string(e.what()).find("restart AMP Studio") != std::string::npos;
          }
        }
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}
