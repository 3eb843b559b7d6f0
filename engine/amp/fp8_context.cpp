#include "engine/amp/fp8_context.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "engine/amp/fp8_block_grid.h"
#include "engine/backend/backend.h"
#include "engine/config/config_schema.h"
#include "engine/nn/layer.h"
#include "engine/nn/linear.h"
#include "engine/nn/sequential.h"
#include "kernels/common/mix64.h"

namespace amp {

namespace {

[[noreturn]] void refuse(const std::string& key, const std::string& what) {
  throw ConfigError(key + ": " + what);
}

const char* const kRecipes = "delayed | current | unscaled | mxfp8 | blockwise | nvfp4";

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string tensorName(const std::string& layer, Fp8Role role) {
  return layer + (role == Fp8Role::Input ? ".x" : role == Fp8Role::Weight ? ".w" : ".dy");
}

// The orientation each GEMM reduces along (fp8_quantize.h: blocks down the columns when true):
// forward reduces x and w over `in` (their columns); the input gradient reduces dy over `out`
// (its columns) and w over `out` (w's rows); the weight gradient reduces dy and x over the batch.
bool reducesAlongRows(Fp8Role role, Fp8Gemm gemm) {
  return gemm == Fp8Gemm::Wgrad || (gemm == Fp8Gemm::Dgrad && role == Fp8Role::Weight);
}

// The orientation whose figures are recorded: x and w in the forward GEMM, dy in the input grad.
bool primary(Fp8Role role, Fp8Gemm gemm) {
  return role == Fp8Role::GradOutput ? gemm == Fp8Gemm::Dgrad : gemm == Fp8Gemm::Forward;
}

// fp8.inject_spike, "STEP:TENSOR:FACTOR": nothing where it is not one (a step > 0, a finite factor).
struct Spike {
  std::int64_t step;
  std::string tensor;
  double factor;
};
std::optional<Spike> parseSpike(const std::string& text) {
  const auto a = text.find(':'), b = text.rfind(':');
  if (a == std::string::npos || b == a) return std::nullopt;
  try {
    Spike s{std::stoll(text.substr(0, a)), text.substr(a + 1, b - a - 1), std::stod(text.substr(b + 1))};
    if (s.step > 0 && std::isfinite(s.factor)) return s;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

Fp8Context::Recipe Fp8Context::parseRecipe(const std::string& name) {
  if (name == "delayed") return Recipe::Delayed;
  // unscaled: a per-tensor recipe whose scale is always 1 (what fp8 without scaling loses: the
  // "fp8 needs a scale" lesson); specFor tells it from current by the configured name.
  if (name == "current" || name == "unscaled") return Recipe::Current;
  if (name == "mxfp8") return Recipe::Mxfp8;
  if (name == "blockwise") return Recipe::Blockwise;
  if (name == "nvfp4") return Recipe::Nvfp4;
  refuse("fp8.recipe", std::string("expected one of ") + kRecipes + ", got '" + name + "'");
}

void validateFp8Config(const Fp8Config& c) {
  auto oneOf = [](const std::string& key, const std::string& v, std::initializer_list<const char*> ok) {
    std::string list;
    for (const char* o : ok) {
      if (v == o) return;
      list += list.empty() ? o : std::string(" | ") + o;
    }
    refuse(key, "expected one of " + list + ", got '" + v + "'");
  };
  oneOf("fp8.recipe", c.recipe, {"delayed", "current", "unscaled", "mxfp8", "blockwise", "nvfp4"});
  if (c.recipe == "unscaled" && !c.whatIf.empty())
    refuse("fp8.what_if", "an unscaled run has no what-if recipe (run the other recipe and compare)");
  oneOf("fp8.format", c.format, {"hybrid", "e4m3"});
  oneOf("fp8.amax_compute", c.amaxCompute, {"max", "most_recent"});
  oneOf("fp8.mx_rounding", c.mxRounding, {"floor", "ceil", "fit"});
  oneOf("fp8.overflow", c.overflow, {"saturate", "inf_nan"});
  if (c.historyLen < 1 || c.historyLen > 1000000)
    refuse("fp8.history_len", "expected 1 to 1000000 steps of amax history, got " + std::to_string(c.historyLen));
  if (c.margin < -64 || c.margin > 64) refuse("fp8.margin", "expected -64 to 64, got " + std::to_string(c.margin));
  if (c.accumBits < 0 || c.accumBits > 23)
    refuse("fp8.accum_bits", "expected 0 (exact fp32) or 1 to 23 mantissa bits, got " + std::to_string(c.accumBits));
  if (c.accumPromote < 1) refuse("fp8.accum_promote", "expected at least 1 product, got " + std::to_string(c.accumPromote));
  if (!c.whatIf.empty()) oneOf("fp8.what_if", c.whatIf, {"delayed", "current", "mxfp8", "blockwise", "nvfp4"});
  if (!c.injectSpike.empty()) {
    const bool ok = parseSpike(c.injectSpike).has_value();
    if (!ok) refuse("fp8.inject_spike", "expected STEP:TENSOR:FACTOR (e.g. 40:fc2.x:100), got '" + c.injectSpike + "'");
  }
}

std::string describeFp8Recipe(const Fp8Config& c) {
  std::ostringstream s;
  if (c.recipe == "nvfp4") {
    s << "nvfp4";
    if (c.hadamard) s << " + RHT";
    if (c.stochasticRounding) s << " + SR";
  } else if (c.recipe == "delayed") {
    s << "fp8 delayed (" << c.format << ", " << c.historyLen << ", " << c.amaxCompute << ")";
  } else if (c.recipe == "current") {
    s << "fp8 current (" << c.format << ")";
  } else if (c.recipe == "unscaled") {
    s << "fp8 unscaled (" << c.format << ", scale 1)";
  } else if (c.recipe == "mxfp8") {
    s << "mxfp8 (" << c.format << ", " << c.mxRounding << ")";
  } else {
    s << "fp8 blockwise (" << c.format << (c.powerOfTwoScales ? ", 2^k scales" : "") << ")";
  }
  if (c.accumBits > 0) s << " [accumulator model: " << c.accumBits << " bits, promote every " << c.accumPromote << "]";
  return s.str();
}

Fp8Context::Fp8Context(const Fp8Config& config, std::uint64_t seed) : m_config(config), m_seed(seed) {
  validateFp8Config(config);
  m_recipe = parseRecipe(config.recipe);
  m_whatIfRecipe = m_recipe;
  if (!config.whatIf.empty()) {
    m_whatIfRecipe = parseRecipe(config.whatIf);
    m_hasWhatIf = true;
  }
  if (const auto spike = parseSpike(config.injectSpike)) {
    m_spikeStep = spike->step;
    m_spikeTensor = spike->tensor;
    m_spikeFactor = spike->factor;
  }
}

void Fp8Context::setModel(const Sequential& model) {
  m_linears.clear();
  m_quantized.clear();
  for (const auto& layer : model.layers())
    layer->forEachLayer([this](Layer& l) {
      if (dynamic_cast<Linear*>(&l)) m_linears.push_back(l.name());
    });
  std::vector<bool> keep(m_linears.size(), false);
  for (const std::string& item : splitList(m_config.keepBf16)) {
    if (item == "none") continue;
    bool found = false;
    for (std::size_t i = 0; i < m_linears.size(); ++i) {
      const bool match = item == m_linears[i] || (item == "first" && i == 0) ||
                         (item == "last" && i + 1 == m_linears.size()) || item == std::to_string(i);
      if (match) keep[i] = found = true;
    }
    if (!found && item != "first" && item != "last")
      refuse("fp8.keep_bf16", "no Linear layer '" + item + "' (by name or 0-based position) in this model" +
                                  (m_linears.empty() ? "" : "; its Linear layers: " + m_linears.front() + " ... " + m_linears.back()));
  }
  for (std::size_t i = 0; i < m_linears.size(); ++i)
    if (!keep[i]) m_quantized.push_back(m_linears[i]);
  if (m_linears.empty()) refuse("amp.mode", "fp8 quantises the Linear layers' GEMMs, and this model has none");
  if (m_quantized.empty())
    refuse("fp8.keep_bf16", "'" + m_config.keepBf16 + "' keeps all " + std::to_string(m_linears.size()) +
                                " Linear layers in bf16: nothing would run in fp8 (use none, or fewer)");
  if (!m_spikeTensor.empty()) {
    bool ok = false;
    for (const auto& n : m_quantized)
      for (Fp8Role r : {Fp8Role::Input, Fp8Role::Weight, Fp8Role::GradOutput}) ok |= tensorName(n, r) == m_spikeTensor;
    if (!ok) refuse("fp8.inject_spike", "no quantised tensor '" + m_spikeTensor + "' (a quantised Linear layer's name, then .x, .w or .dy)");
  }
}

bool Fp8Context::quantizes(const std::string& linearName) const {
  return std::find(m_quantized.begin(), m_quantized.end(), linearName) != m_quantized.end();
}

void Fp8Context::beginStep(std::int64_t step, bool histogramStep) {
  m_step = step;
  m_histogramStep = histogramStep;
}

MiniFormat Fp8Context::formatOf(Recipe recipe, Fp8Role role) const {
  if (recipe == Recipe::Nvfp4) return MiniFormat::E2M1;
  return role == Fp8Role::GradOutput && m_config.format == "hybrid" ? MiniFormat::E5M2 : MiniFormat::E4M3;
}

// A delayed-scaling tensor's history takes the amax of its last step when a new step first uses
// it (specFor then makes the scale from the window: Transformer Engine updates after each step,
// which gives the same scale for the next one).
void Fp8Context::roll(History& h, std::int64_t step) {
  if (h.step == step) return;
  if (h.step > 0) {
    float amax = h.pending;
    if (m_reduceAmax) amax = m_reduceAmax(amax);
    // A non-finite amax (an overflowed step) never enters the window: it would freeze the scale
    // for as many steps as the window is long.
    if (std::isfinite(amax)) {
      h.amax.push_back(amax);
      if (static_cast<std::int64_t>(h.amax.size()) > m_config.historyLen) h.amax.erase(h.amax.begin());
    }
  }
  h.step = step;
  h.pending = 0;
}

// The amax a delayed scale is made from: the window's max, or its most recent (fp8.amax_compute).
float Fp8Context::windowAmax(const History& h) const {
  return m_config.amaxCompute == "max" ? *std::max_element(h.amax.begin(), h.amax.end()) : h.amax.back();
}

QuantSpec Fp8Context::specFor(Recipe recipe, const std::string& tensor, Fp8Role role, Fp8Gemm gemm, float amax,
                              History* history) const {
  QuantSpec s;
  s.format = formatOf(recipe, role);
  s.overflow = m_config.overflow == "saturate" ? Overflow::Saturate : Overflow::NonSaturating;
  s.alongRows = reducesAlongRows(role, gemm);
  const std::uint64_t salt = mix64(m_seed ^ mix64(std::hash<std::string>{}(tensor)) ^ (std::uint64_t(gemm) << 56));
  switch (recipe) {
    case Recipe::Delayed: {
      s.scaling = QuantSpec::Scaling::PerTensor;
      const float fmax = miniMax(s.format);
      float scale = 1.0f;
      if (history && !history->amax.empty()) {
        scale = perTensorScale(windowAmax(*history), fmax, static_cast<int>(m_config.margin), history->scale);
      }
      s.tensorScale = scale;
      break;
    }
    case Recipe::Current:
      s.scaling = QuantSpec::Scaling::PerTensor;
      s.tensorScale = m_config.recipe == "unscaled"
                          ? 1.0f
                          : perTensorScale(amax, miniMax(s.format), static_cast<int>(m_config.margin), 1.0f);
      break;
    case Recipe::Mxfp8:
      s.scaling = QuantSpec::Scaling::Mx;
      s.block = 32;
      s.mxRounding = m_config.mxRounding == "floor" ? MxRounding::Floor
                     : m_config.mxRounding == "ceil" ? MxRounding::Ceil : MxRounding::RoundUp;
      break;
    case Recipe::Blockwise:
      s.scaling = QuantSpec::Scaling::Blockwise;
      s.block = 128;
      s.square = role == Fp8Role::Weight;
      s.powerOfTwo = m_config.powerOfTwoScales;
      break;
    case Recipe::Nvfp4:
      s.scaling = QuantSpec::Scaling::Nvfp4;
      s.block = 16;
      s.hadamard = m_config.hadamard && gemm == Fp8Gemm::Wgrad;
      s.hadamardSigns = static_cast<std::uint16_t>(mix64(m_seed ^ 0x4841444D41524Dull) & 0xFFFFu);
      s.stochastic = m_config.stochasticRounding && role == Fp8Role::GradOutput;
      s.seed = mix64(salt ^ std::uint64_t(m_step));
      break;
  }
  return s;
}

bool Fp8Context::spikeDue(const std::string& tensor) const {
  return m_spikeEnabled && m_step == m_spikeStep && tensor == m_spikeTensor;
}

void Fp8Context::maybeSpike(const std::string& tensor, std::vector<float>& values) const {
  if (!spikeDue(tensor) || values.empty()) return;
  values[0] = static_cast<float>(m_spikeFactor * amaxOf(values.data(), static_cast<std::int64_t>(values.size())));
}

QuantSpec Fp8Context::prepare(const std::string& tensor, Fp8Role role, Fp8Gemm gemm, float amax, bool training,
                              History** historyOut) {
  History* history = nullptr;
  if (m_recipe == Recipe::Delayed) {
    history = &m_histories[tensor];
    if (training) roll(*history, m_step);
  }
  QuantSpec spec = specFor(m_recipe, tensor, role, gemm, amax, history);
  if (history) history->scale = spec.tensorScale;
  *historyOut = history;
  return spec;
}

void Fp8Context::record(const std::string& tensor, Fp8Role role, Fp8Gemm gemm, float amax, const QuantSpec& spec,
                        const QuantStats& stats, History* history, const std::function<std::vector<float>()>& original,
                        std::int64_t rows, std::int64_t cols) {
  if (history && std::isfinite(amax)) history->pending = std::max(history->pending, amax);
  Fp8TensorRecord r;
  r.tensor = tensor;
  r.format = miniFormatName(spec.format);
  r.amax = stats.amax;
  r.scale = stats.scale;
  if (history && !history->amax.empty())
    r.historyAmax = windowAmax(*history);
  r.underflow = stats.underflowFrac();
  r.overflow = stats.overflowFrac();
  r.sqnrDb = stats.sqnrDb();
  r.relMse = stats.relMse();
  r.count = stats.count;
  if (m_histogramStep) r.blockExponents = stats.blockExponents;
  std::vector<float> values;  // the tensor before quantising, fetched once for every use below
  if (m_histogramStep || m_hasWhatIf) values = original();
  // The host overload keeps its values only for a what-if: without them, no figures from them.
  const bool whole = values.size() == static_cast<std::size_t>(rows * cols);
  // The values quantised again on the host with another spec, for its figures alone (the
  // dequantised copy is not read).
  std::vector<float> scratch(values.size());
  const auto measure = [&](const QuantSpec& s, QuantStats& st) {
    quantizeDequantize(values.data(), scratch.data(), rows, cols, s, &st);
  };
  if (m_histogramStep && whole) {
    // The host reference again, for the histogram alone (the spec fixes every scale, so this is
    // the backend's quantisation exactly, whichever backend ran it).
    QuantStats h;
    h.wantScaledExponents = true;
    measure(spec, h);
    r.scaledExponents = std::move(h.scaledExponents);
    // Block recipes: the scales over the tensor's shape beside its magnitudes (the app's block
    // scales view), from the same values and spec, so the same scales.
    r.blockGrid = fp8BlockGrid(values.data(), rows, cols, spec);
  }
  if (m_histogramStep && m_recipe == Recipe::Nvfp4 && role != Fp8Role::Weight && whole) {
    // The weight gradient's copy of this operand, from the same values with the transform off
    // and on (the run's stochastic rounding either way): a comparison no seed can move.
    QuantSpec ws = specFor(Recipe::Nvfp4, tensor, role, Fp8Gemm::Wgrad, amax, nullptr);
    QuantStats plain, rht;
    ws.hadamard = false;
    measure(ws, plain);
    ws.hadamard = true;
    measure(ws, rht);
    r.hasWgradRht = true;
    r.wgradPlainSqnrDb = plain.sqnrDb();
    r.wgradPlainUnderflow = plain.underflowFrac();
    r.wgradRhtSqnrDb = rht.sqnrDb();
    r.wgradRhtUnderflow = rht.underflowFrac();
  }
  if (m_hasWhatIf) {
    History* other = nullptr;
    if (m_whatIfRecipe == Recipe::Delayed) {
      other = &m_whatIfHistories[tensor];
      roll(*other, m_step);
    }
    const QuantSpec ws = specFor(m_whatIfRecipe, tensor, role, gemm, amax, other);
    if (other) {
      other->scale = ws.tensorScale;
      if (std::isfinite(amax)) other->pending = std::max(other->pending, amax);
    }
    QuantStats w;
    measure(ws, w);
    r.hasWhatIf = true;
    r.whatIfUnderflow = w.underflowFrac();
    r.whatIfOverflow = w.overflowFrac();
    r.whatIfSqnrDb = w.sqnrDb();
  }
  m_records.push_back(std::move(r));
}

void Fp8Context::quantize(const std::string& layer, Fp8Role role, Fp8Gemm gemm, std::vector<float>& values,
                          std::int64_t rows, std::int64_t cols, bool training) {
  const std::string tensor = tensorName(layer, role);
  training = training && !m_quiet;
  const bool rec = training && primary(role, gemm);
  if (rec) maybeSpike(tensor, values);
  const float amax = amaxOf(values.data(), rows * cols);
  History* history = nullptr;
  const QuantSpec spec = prepare(tensor, role, gemm, amax, training, &history);
  std::vector<float> original;
  if (rec && m_hasWhatIf) original = values;
  QuantStats stats;
  quantizeDequantize(values.data(), values.data(), rows, cols, spec, rec ? &stats : nullptr);
  if (rec) record(tensor, role, gemm, amax, spec, stats, history, [&] { return std::move(original); }, rows, cols);
}

void Fp8Context::quantize(Backend& be, const std::string& layer, Fp8Role role, Fp8Gemm gemm, const Tensor& x,
                          std::int64_t cols, QuantizedTensor& q, MemCategory cat, bool training) {
  const std::string tensor = tensorName(layer, role);
  training = training && !m_quiet;
  const bool rec = training && primary(role, gemm);
  const std::int64_t rows = x.numel() / cols;
  const Tensor* src = &x;
  Tensor spiked;
  if (rec && spikeDue(tensor)) {  // one step of a run: a host round trip is fine
    std::vector<float> v = be.toHostFloat(x);
    maybeSpike(tensor, v);
    spiked = be.fromHost(v, {rows, cols}, DType::F32, MemCategory::Workspace);
    src = &spiked;
  }
  const float amax = be.amax(*src);
  History* history = nullptr;
  const QuantSpec spec = prepare(tensor, role, gemm, amax, training, &history);
  QuantStats stats;
  be.quantize(*src, cols, spec, q, cat, rec ? &stats : nullptr);
  if (rec) record(tensor, role, gemm, amax, spec, stats, history, [&] { return be.toHostFloat(*src); }, rows, cols);
}

void Fp8Context::recordOutputAmax(const std::string& layer, float amax) {
  if (m_quiet) return;
  OutputAmax& o = m_outputAmax[layer];
  if (o.step != m_step) o = OutputAmax{m_step, amax};
  else if (std::isnan(amax) || amax > o.amax) o.amax = amax;  // a NaN stays (nothing compares above it)
}

float Fp8Context::outputAmax(const std::string& layer) const {
  const auto it = m_outputAmax.find(layer);
  return it == m_outputAmax.end() ? std::numeric_limits<float>::quiet_NaN() : it->second.amax;
}

std::int64_t Fp8Context::outputAmaxStep(const std::string& layer) const {
  const auto it = m_outputAmax.find(layer);
  return it == m_outputAmax.end() ? 0 : it->second.step;
}

std::vector<Fp8TensorRecord> Fp8Context::takeRecords() {
  std::vector<Fp8TensorRecord> out;
  out.swap(m_records);
  return out;
}

std::map<std::string, std::vector<float>> Fp8Context::state() const {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, h] : m_histories) {
    std::vector<float> v{h.scale, static_cast<float>(h.step), h.pending};
    v.insert(v.end(), h.amax.begin(), h.amax.end());
    out[name] = std::move(v);
  }
  return out;
}

void Fp8Context::restore(const std::map<std::string, std::vector<float>>& state) {
  m_histories.clear();
  for (const auto& [name, v] : state) {
    if (v.size() < 3 || static_cast<std::int64_t>(v.size() - 3) > m_config.historyLen)
      throw ConfigError("checkpoint: fp8 state of '" + name + "' holds " + std::to_string(v.size() < 3 ? 0 : v.size() - 3) +
                        " amax values, more than fp8.history_len=" + std::to_string(m_config.historyLen));
    const std::string layer = name.substr(0, name.rfind('.'));
    if (!m_quantized.empty() && !quantizes(layer))
      throw ConfigError("checkpoint: fp8 state for '" + name + "', a tensor this run does not quantise (fp8.keep_bf16 or the model differ)");
    History h;
    h.scale = v[0];
    h.step = static_cast<std::int64_t>(v[1]);
    h.pending = v[2];
    h.amax.assign(v.begin() + 3, v.end());
    m_histories[name] = std::move(h);
  }
}

}  // namespace amp
