#include "engine/amp/autocast_policy.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace amp {

namespace {
constexpr std::string_view kNames[] = {"lower_precision", "fp32", "fp32_output",
                                       "promote", "pass_through", "banned"};

// The lists of PyTorch's CUDA autocast (the "CUDA Ops that can autocast to float16" section
// of the AMP documentation and autocast_mode.cpp).
const char* const kLower[] = {
    "__matmul__", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "chain_matmul",
    "multi_dot", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "conv_tbc", "GRUCell", "linear", "LSTMCell", "matmul", "mm", "mv",
    "prelu", "RNNCell", "_convolution", "cudnn_convolution", "_scaled_dot_product_attention",
    "scaled_dot_product_attention"};
const char* const kFp32[] = {
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "acos", "asin", "binary_cross_entropy_with_logits",
    "cosh", "cosine_embedding_loss", "cdist", "cosine_similarity", "cross_entropy",
    "cumprod", "dist", "erfinv", "exp", "expm1", "group_norm", "hinge_embedding_loss",
    "kl_div", "l1_loss", "layer_norm", "log", "log10", "log1p", "log2", "margin_ranking_loss",
    "mse_loss", "multilabel_margin_loss", "multi_margin_loss", "nll_loss", "norm",
    "normalize", "pdist", "poisson_nll_loss", "pow", "reciprocal", "rsqrt", "sinh",
    "smooth_l1_loss", "huber_loss", "soft_margin_loss", "softplus", "tan",
    "triplet_margin_loss", "renorm", "frobenius_norm", "nuclear_norm", "prod_fp32"};
const char* const kFp32Output[] = {"softmax", "log_softmax", "cumsum", "sum", "prod"};
const char* const kPromote[] = {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot",
                                "grid_sampler", "index_put", "scatter_add", "tensordot",
                                "cat", "stack"};
const char* const kBanned[] = {"binary_cross_entropy"};
}  // namespace

std::string_view castPolicyName(CastPolicy p) { return kNames[static_cast<int>(p)]; }

std::optional<CastPolicy> parseCastPolicy(std::string_view s) {
  for (int i = 0; i < 6; ++i)
    if (kNames[i] == s) return static_cast<CastPolicy>(i);
  if (s == "low" || s == "lower") return CastPolicy::LowerPrecision;
  return std::nullopt;
}

AutocastPolicy AutocastPolicy::pytorchDefault() {
  AutocastPolicy p;
  for (const char* op : kLower) p.m_defaults[op] = CastPolicy::LowerPrecision;
  for (const char* op : kFp32) p.m_defaults[op] = CastPolicy::Fp32;
  for (const char* op : kFp32Output) p.m_defaults[op] = CastPolicy::Fp32Output;
  for (const char* op : kPromote) p.m_defaults[op] = CastPolicy::Promote;
  for (const char* op : kBanned) p.m_defaults[op] = CastPolicy::Banned;
  // Ops our layers run that PyTorch leaves unlisted, named so the trace and editor show them.
  for (const char* op : {"relu", "tanh", "sigmoid", "gelu", "max_pool2d", "dropout",
                         "batch_norm", "flatten", "add", "adaptive_avg_pool2d", "embedding"})
    p.m_defaults[op] = CastPolicy::PassThrough;
  p.m_table = p.m_defaults;
  return p;
}

bool AutocastPolicy::isKnownOp(std::string_view op) {
  static const AutocastPolicy all = pytorchDefault();
  return all.m_defaults.find(op) != all.m_defaults.end();
}

std::string AutocastPolicy::nearestKnownOp(std::string_view op) {
  static const AutocastPolicy all = pytorchDefault();
  // Levenshtein distance, one row at a time; ties keep the alphabetically first.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  std::size_t bestDistance = std::string::npos;
  for (const auto& [name, policy] : all.m_defaults) {
    const std::size_t d = distance(op.substr(0, 64), name);
    if (d < bestDistance) best = name, bestDistance = d;
  }
  return best;
}

CastPolicy AutocastPolicy::policyFor(std::string_view op) const {
  auto it = m_table.find(op);
  return it == m_table.end() ? CastPolicy::PassThrough : it->second;
}

void AutocastPolicy::setPolicy(const std::string& op, CastPolicy p) { m_table[op] = p; }

std::vector<std::pair<std::string, CastPolicy>> AutocastPolicy::overrides() const {
  std::vector<std::pair<std::string, CastPolicy>> out;
  for (const auto& [op, p] : m_table) {
    auto d = m_defaults.find(op);
    if (d == m_defaults.end() || d->second != p) out.emplace_back(op, p);
  }
  return out;
}

DType promoteTypes(const std::vector<DType>& inputs) {
  DType w = inputs.empty() ? DType::F32 : inputs.front();
  for (DType d : inputs)
    if (d != w) w = DType::F32;
  return w;
}

DType AutocastPolicy::computeDtype(std::string_view op, DType low,
                                   const std::vector<DType>& inputs) const {
  switch (policyFor(op)) {
    case CastPolicy::LowerPrecision: return low;
    case CastPolicy::Fp32:
    case CastPolicy::Fp32Output: return DType::F32;
    case CastPolicy::Promote: return promoteTypes(inputs);
    // An unlisted op runs as outside autocast: in its input's dtype, or, with several inputs,
    // in the type they promote to (add of an fp16 and an fp32 tensor is fp32).
    case CastPolicy::PassThrough: return promoteTypes(inputs);
    case CastPolicy::Banned:
      throw std::invalid_argument(
          std::string(op) + " is unsafe to autocast (refused, as in PyTorch): use the "
          "with-logits form, which autocast runs in fp32");
  }
  return DType::F32;
}

}  // namespace amp
