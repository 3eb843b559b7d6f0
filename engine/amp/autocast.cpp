#include "engine/amp/autocast.h"

#include <stdexcept>

namespace amp {

std::string_view tracePhaseName(TracePhase p) {
  switch (p) {
    case TracePhase::Forward: return "forward";
    case TracePhase::Backward: return "backward";
    case TracePhase::Optimizer: return "optimizer";
  }
  return "?";
}

Autocast::Autocast(AutocastPolicy policy) : m_policy(std::move(policy)) {}

void Autocast::enter(bool enabled, DType dtype) {
  if (enabled && !isLowPrecision(dtype))
    throw std::invalid_argument("autocast dtype must be fp16 or bf16");
  m_regions.push_back({enabled, dtype});
}

void Autocast::exit() {
  if (m_regions.empty()) throw std::logic_error("autocast: exit without enter");
  m_regions.pop_back();
  // PyTorch clears the cast cache when the outermost autocast region exits.
  if (m_regions.empty()) m_cache.clear();
}

CastPolicy Autocast::effectivePolicy(std::string_view op) const {
  return enabled() ? m_policy.policyFor(op) : CastPolicy::Promote;
}

DType Autocast::computeDtype(std::string_view op, const std::vector<DType>& inputs) const {
  return enabled() ? m_policy.computeDtype(op, lowDtype(), inputs) : promoteTypes(inputs);
}

Tensor Autocast::castParameter(Backend& be, const Tensor& master, DType to, bool& hit,
                               bool& cast) {
  hit = false;
  cast = master.dtype() != to;
  if (!cast) return master;
  // Only fp32 leaves are cached, and only inside an enabled region (as PyTorch).
  const bool cacheable = enabled() && master.dtype() == DType::F32 && to == lowDtype();
  if (cacheable) {
    auto it = m_cache.find(master.id());
    if (it != m_cache.end()) {
      hit = true;
      cast = false;
      return it->second;
    }
  }
  // The 16-bit copies are the weights the model computes with; the fp32 originals are then
  // the master weights (the paper's terms).
  Tensor copy = be.cast(master, to, MemCategory::Weights);
  if (cacheable) m_cache.emplace(master.id(), copy);
  return copy;
}

Tensor Autocast::castParameter(Backend& be, Parameter& param, DType to, bool& hit, bool& cast) {
  const Tensor& master = param.value;
  const bool keep = be.keepsWeightCopies() && enabled() && master.dtype() == DType::F32 &&
                    to == lowDtype();
  if (!keep || m_cache.count(master.id())) return castParameter(be, master, to, hit, cast);
  Parameter::WeightCopy& copy = param.lowCopy;
  if (copy.tensor.defined() && copy.master == master.id() && copy.tensor.dtype() == to) {
    hit = false;
    cast = true;
    m_cache.emplace(master.id(), copy.tensor);
    return copy.tensor;
  }
  Tensor t = castParameter(be, master, to, hit, cast);
  copy = {t, master.id()};
  return t;
}

std::vector<OpTraceEntry> Autocast::takeTrace() {
  std::vector<OpTraceEntry> out;
  out.swap(m_trace);
  return out;
}

}  // namespace amp
