// Two rules of the cuDNN convolution plans (cudnn_conv.cpp), as host logic a CPU test can drive
// (tests/unit/test_conv_plan_policy.cpp). No CUDA or cuDNN types.
//
// A cap on an algorithm's workspace. cuDNN's heuristics rank algorithms by speed alone; the
// best-ranked one may want gigabytes of workspace, allocated on every call from the same memory
// the model needs. An algorithm over the cap is passed over for the next acceptable one (the
// GEMM-like list always ends with algorithms that need little or none), as PyTorch passes over
// one whose workspace it cannot allocate. The cap: AMP_CUDA_CONV_WORKSPACE_MB when set, else a
// sixteenth of the device's memory, at most 2 GiB.
//
// Failed algorithms, forgotten after a while. An algorithm that plans but fails to run (an
// execution failure that may be transient, or an NHWC kernel that does not run on this device)
// is refused for that problem (one shape, dtype and layout) for kHoldSeconds: the re-plan takes
// the next algorithm in the same layout, and only a problem with none left goes to the NCHW
// copies, until the hold ends and the algorithm is tried again. Before, one failure sent every
// later call of the process to the NCHW copies, and an NCHW failure re-planned the same
// failing algorithm at every call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace amp::cuda {

constexpr double kFailedAlgorithmHoldSeconds = 60.0;

// The workspace cap in bytes for a device of deviceBytes; env: AMP_CUDA_CONV_WORKSPACE_MB's text
// (null or empty: unset). An unreadable or negative value is ignored.
inline std::size_t convWorkspaceCap(std::size_t deviceBytes, const char* env) {
  if (env && *env) {
    char* end = nullptr;
    const double mb = std::strtod(env, &end);
    if (end != env && *end == '\0' && mb >= 0) return static_cast<std::size_t>(mb * 1024 * 1024);
  }
  const std::size_t twoGiB = std::size_t(2) << 30;
  return deviceBytes > 0 ? std::min(twoGiB, deviceBytes / 16) : twoGiB;
}

// Algorithms refused per problem key until a time (seconds on any steady clock).
template <class Key>
class FailedAlgorithms {
 public:
  explicit FailedAlgorithms(double holdSeconds = kFailedAlgorithmHoldSeconds) : m_hold(holdSeconds) {}

  void failed(const Key& key, int algo, double now) { m_until[{key, algo}] = now + m_hold; }

  bool refused(const Key& key, int algo, double now) const {
    const auto it = m_until.find({key, algo});
    return it != m_until.end() && now < it->second;
  }

  // When the earliest hold on this key ends (infinity when none holds): a problem with no
  // algorithm left because of holds is unplannable until then, not for ever.
  double nextRelease(const Key& key, double now) const {
    double t = std::numeric_limits<double>::infinity();
    for (const auto& [k, until] : m_until)
      if (k.first == key && now < until) t = std::min(t, until);
    return t;
  }

 private:
  double m_hold;
  std::map<std::pair<Key, int>, double> m_until;
};

}  // namespace amp::cuda
