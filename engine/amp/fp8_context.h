// The fp8 / block-scaled recipe of one run, as the Linear layers use it: which layers quantise,
// how each of their GEMM operands is quantised (engine/amp/fp8_quantize.h), the per-tensor scale
// state of delayed scaling (an amax history per tensor), the figures of every quantised tensor,
// and the state a checkpoint carries. Owned by the Trainer; LayerContext::fp8 points at it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/amp/fp8_config.h"
#include "engine/amp/fp8_quantize.h"
#include "engine/amp/fp8_record.h"
#include "engine/backend/quantized_tensor.h"

namespace amp {

class Backend;
class Sequential;

enum class Fp8Role : std::uint8_t { Input, Weight, GradOutput };  // x, w, dy
enum class Fp8Gemm : std::uint8_t { Forward, Dgrad, Wgrad };

// Checks every fp8.* key (ConfigError naming the key); nothing else is needed to construct.
void validateFp8Config(const Fp8Config& c);
// "fp8 delayed (hybrid, history 1024, max)", "nvfp4 + RHT + SR", "mxfp8 (e4m3, fit)".
std::string describeFp8Recipe(const Fp8Config& c);

class Fp8Context {
 public:
  Fp8Context(const Fp8Config& config, std::uint64_t seed);

  // The model's Linear layers in order (Layer::forEachLayer), to resolve fp8.keep_bf16. Throws
  // ConfigError when none is left to quantise.
  void setModel(const Sequential& model);
  bool quantizes(const std::string& linearName) const;
  const std::vector<std::string>& quantizedLayers() const { return m_quantized; }
  // Per-tensor recipes quantise each tensor once a step and reuse it in every GEMM; block
  // recipes quantise each GEMM's operands along that GEMM's reduction dimension.
  bool perTensor() const { return m_recipe == Recipe::Delayed || m_recipe == Recipe::Current; }

  // Training step `step` (1-based) begins; histogram steps also record block-scale histograms.
  void beginStep(std::int64_t step, bool histogramStep);
  // Quantises `values` (rows x cols, row-major) in place for GEMM `gemm` as `role` of layer
  // `layer`: the dequantised operand. `training` false (evaluation): no history, no figures.
  void quantize(const std::string& layer, Fp8Role role, Fp8Gemm gemm, std::vector<float>& values,
                std::int64_t rows, std::int64_t cols, bool training);
  // The same on the backend: x (a (numel / cols) x cols matrix where the backend keeps it)
  // quantised into q's codes and scales (Backend::quantize; q's memory in category `cat`),
  // with the history, the spike, the figures and the what-if as above.
  void quantize(Backend& be, const std::string& layer, Fp8Role role, Fp8Gemm gemm, const Tensor& x,
                std::int64_t cols, QuantizedTensor& q, MemCategory cat, bool training);
  std::vector<Fp8TensorRecord> takeRecords();

  // The forward GEMM's output amax of a quantised Linear layer ("D amax": y = x . W^T + b in
  // fp32, before its cast to the autocast dtype), recorded with the layer's fp8 figures so its
  // range sits beside its inputs'. No recipe here scales an output from it (the outputs stay
  // bf16; Transformer Engine needs it for fp8 outputs), so it is kept for inspection: the
  // largest of the step (micro-batches included), NaN where a step's outputs were not finite.
  // recordsOutputs: whether a forward should measure it: a training histogram step, not a quiet
  // replay. Histogram steps only: the measure is a read back to the host (our amax kernel on a
  // GPU: cuBLASLt has D's amax for fp8 outputs only), a wait per layer that other steps, and the
  // CUDA graphs they may replay, must not have; histogram steps read the statistics back anyway.
  bool recordsOutputs(bool training) const { return training && !m_quiet && m_histogramStep; }
  void recordOutputAmax(const std::string& layer, float amax);
  // The amax the layer's output had in the last step that recorded one; NaN before any.
  float outputAmax(const std::string& layer) const;
  std::int64_t outputAmaxStep(const std::string& layer) const;  // that step; 0 before any

  // Data-parallel: the amax of a tensor reduced (max) over every rank before a scale is made
  // from it, so every rank uses the same scale.
  void setAmaxReducer(std::function<float(float)> reduce) { m_reduceAmax = std::move(reduce); }
  // A replay of the step (the diagnosis of a non-finite loss): quantised as the step was, but
  // neither recorded nor entered into the amax histories.
  class Quiet {
   public:
    explicit Quiet(Fp8Context* c) : m_c(c) { if (m_c) m_c->m_quiet = true; }
    ~Quiet() { if (m_c) m_c->m_quiet = false; }
    Quiet(const Quiet&) = delete;
    Quiet& operator=(const Quiet&) = delete;
   private:
    Fp8Context* m_c;
  };
  // fp8.inject_spike on this rank or not (dist.inject_rank names the one rank that injects).
  void setSpikeEnabled(bool on) { m_spikeEnabled = on; }

  // The accumulation model (fp8.accum_bits > 0): the GEMM the Linear layers call instead.
  bool accumulatorModel() const { return m_config.accumBits > 0; }
  int accumBits() const { return static_cast<int>(m_config.accumBits); }
  int accumPromote() const { return static_cast<int>(m_config.accumPromote); }

  // Checkpoints: every delayed-scaling tensor's scale and amax history, by tensor name, as
  // floats [scale, step of the last amax, pending amax, history...]. restore() refuses state of
  // another history length or tensor set (a stale history is a known bug class elsewhere).
  std::map<std::string, std::vector<float>> state() const;
  void restore(const std::map<std::string, std::vector<float>>& state);

  const Fp8Config& config() const { return m_config; }
  std::string describe() const { return describeFp8Recipe(m_config); }

 private:
  enum class Recipe : std::uint8_t { Delayed, Current, Mxfp8, Blockwise, Nvfp4 };
  struct History {
    float scale = 1.0f;      // TE: the first step uses scale 1
    std::int64_t step = 0;   // the step whose amax is pending
    float pending = 0;       // the largest amax seen in that step
    std::vector<float> amax; // oldest first, at most historyLen
  };
  static Recipe parseRecipe(const std::string& name);
  QuantSpec specFor(Recipe recipe, const std::string& tensor, Fp8Role role, Fp8Gemm gemm, float amax,
                    History* history) const;
  MiniFormat formatOf(Recipe recipe, Fp8Role role) const;
  void roll(History& h, std::int64_t step);
  float windowAmax(const History& h) const;  // h.amax must not be empty
  bool spikeDue(const std::string& tensor) const;
  void maybeSpike(const std::string& tensor, std::vector<float>& values) const;
  // The spec of one quantisation (rolling the delayed history in training) and the record of
  // its figures (original() gives the values before, for the what-if recipe).
  QuantSpec prepare(const std::string& tensor, Fp8Role role, Fp8Gemm gemm, float amax, bool training,
                    History** history);
  void record(const std::string& tensor, Fp8Role role, Fp8Gemm gemm, float amax, const QuantSpec& spec,
              const QuantStats& stats, History* history, const std::function<std::vector<float>()>& original,
              std::int64_t rows, std::int64_t cols);

  Fp8Config m_config;
  Recipe m_recipe, m_whatIfRecipe;
  bool m_hasWhatIf = false;
  std::uint64_t m_seed;
  std::int64_t m_step = 0;
  bool m_histogramStep = false;
  std::vector<std::string> m_linears, m_quantized;
  std::map<std::string, History> m_histories, m_whatIfHistories;
  struct OutputAmax {
    std::int64_t step = 0;
    float amax = 0;
  };
  std::map<std::string, OutputAmax> m_outputAmax;
  std::vector<Fp8TensorRecord> m_records;
  std::function<float(float)> m_reduceAmax;
  std::int64_t m_spikeStep = 0;
  std::string m_spikeTensor;
  double m_spikeFactor = 0;
  bool m_spikeEnabled = true;
  bool m_quiet = false;
};

}  // namespace amp
