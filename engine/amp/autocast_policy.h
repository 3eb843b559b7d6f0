// autocast's per-op precision lists, as PyTorch's CUDA autocast defines them
// (aten/src/ATen/autocast_mode.cpp), and editable so users can ask "what if softmax ran in
// fp16?". One table serves fp16 and bf16, as on the GPU.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/dtype.h"

namespace amp {

enum class CastPolicy : std::uint8_t {
  LowerPrecision,  // inputs cast to the region's low dtype (matmul, linear, conv, ...)
  Fp32,            // inputs cast to fp32 (exp, log, norms, losses, ...)
  Fp32Output,      // run in fp32, output fp32 (softmax, log_softmax, sum, prod, cumsum)
  Promote,         // widest input dtype wins (cat, stack, addcmul, ...)
  PassThrough,     // runs in its input's dtype, several inputs in their promoted type (relu,
                   // max_pool2d, dropout, batch_norm, adaptive_avg_pool2d, add, ...)
  Banned,          // refused under autocast (binary_cross_entropy on probabilities)
};

std::string_view castPolicyName(CastPolicy p);  // "lower_precision", "fp32", ...
std::optional<CastPolicy> parseCastPolicy(std::string_view s);
// torch.promote_types over the inputs: fp32 beats 16-bit, fp16 with bf16 also gives fp32; no
// inputs give fp32.
DType promoteTypes(const std::vector<DType>& inputs);

class AutocastPolicy {
 public:
  // PyTorch's lists (unlisted ops pass through).
  static AutocastPolicy pytorchDefault();

  CastPolicy policyFor(std::string_view op) const;
  void setPolicy(const std::string& op, CastPolicy p);
  // An op PyTorch's lists or our layers name (a policy for any other op would never apply, so a
  // config naming one is a typo to refuse). Else the known op nearest in spelling, for the error.
  static bool isKnownOp(std::string_view op);
  static std::string nearestKnownOp(std::string_view op);
  // Ops whose policy differs from PyTorch's (for the UI and the run summary).
  std::vector<std::pair<std::string, CastPolicy>> overrides() const;
  const std::map<std::string, CastPolicy, std::less<>>& table() const { return m_table; }

  // The dtype an op computes in, inside a region with low dtype `low`, given its floating
  // inputs. Throws for banned ops.
  DType computeDtype(std::string_view op, DType low, const std::vector<DType>& inputs) const;

 private:
  std::map<std::string, CastPolicy, std::less<>> m_table;
  std::map<std::string, CastPolicy, std::less<>> m_defaults;
};

}  // namespace amp
