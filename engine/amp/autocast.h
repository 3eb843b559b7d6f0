// The autocast state of one training run: nested regions (enabled, low dtype), the weight-cast
// cache of the current outermost region, and an optional per-op trace.
#pragma once

#include <unordered_map>
#include <vector>

#include "engine/amp/autocast_policy.h"
#include "engine/amp/op_trace.h"
#include "engine/backend/backend.h"
#include "engine/nn/parameter.h"

namespace amp {

class Autocast {
 public:
  explicit Autocast(AutocastPolicy policy = AutocastPolicy::pytorchDefault());

  bool enabled() const { return !m_regions.empty() && m_regions.back().enabled; }
  DType lowDtype() const { return m_regions.empty() ? DType::F16 : m_regions.back().dtype; }
  int depth() const { return static_cast<int>(m_regions.size()); }
  const AutocastPolicy& policy() const { return m_policy; }
  AutocastPolicy& policy() { return m_policy; }

  // The dtype `op` computes in here. Inside an enabled region: the policy's answer. Outside,
  // or in an enabled=false sub-region: the widest input (what a user's manual .float() gives).
  DType computeDtype(std::string_view op, const std::vector<DType>& inputs) const;
  CastPolicy effectivePolicy(std::string_view op) const;

  // A parameter (fp32 master) in dtype `to`. Inside an enabled region the cast is cached until
  // the outermost region ends, as PyTorch caches casts of leaf tensors that require grad.
  // `hit` tells whether the cache served it; `cast` whether any cast happened.
  Tensor castParameter(Backend& be, const Tensor& master, DType to, bool& hit, bool& cast);
  // The same for a model's parameter; where the backend keeps weight copies
  // (Backend::keepsWeightCopies) the cast is served by, or kept as, the parameter's lowCopy,
  // which the optimizer's step then keeps current. `cast` still reports a cast (the trace shows
  // autocast's semantics, PyTorch's, whoever did the rounding).
  Tensor castParameter(Backend& be, Parameter& param, DType to, bool& hit, bool& cast);
  std::size_t cacheSize() const { return m_cache.size(); }

  // Tracing: when on, layers append rows for every op they run.
  void setTracing(bool on) { m_tracing = on; }
  bool tracing() const { return m_tracing; }
  // Adds make()'s entry to the trace; make runs only while tracing, so the untraced steps
  // (nearly all) build no strings or vectors for it.
  template <class Make>
  void record(Make&& make) {
    if (m_tracing) m_trace.push_back(make());
  }
  std::vector<OpTraceEntry> takeTrace();

 private:
  friend class AutocastRegion;
  struct Region {
    bool enabled;
    DType dtype;
  };
  void enter(bool enabled, DType dtype);
  void exit();

  AutocastPolicy m_policy;
  std::vector<Region> m_regions;
  std::unordered_map<const void*, Tensor> m_cache;  // master buffer -> cast copy
  bool m_tracing = false;
  std::vector<OpTraceEntry> m_trace;
};

// RAII region: `with torch.autocast(device, dtype, enabled):`.
class AutocastRegion {
 public:
  AutocastRegion(Autocast& ac, bool enabled, DType dtype) : m_ac(ac) { m_ac.enter(enabled, dtype); }
  ~AutocastRegion() { m_ac.exit(); }
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  Autocast& m_ac;
};

}  // namespace amp
