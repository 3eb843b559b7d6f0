// The fp8 / block-scaled recipe of a run (amp.mode=fp8; keys fp8.*, README "fp8 training").
// fp8 sits on bf16 autocast: the Linear layers' three GEMMs (forward, input gradient, weight
// gradient) take quantised operands, everything else is bf16 AMP, master weights and optimizer
// state stay fp32. Plain data, as run_config.h: the schema reads and writes it by key.
#pragma once

#include <cstdint>
#include <string>

namespace amp {

struct Fp8Config {
  // delayed (Transformer Engine's default: per-tensor scales from an amax history) | current
  // (per-tensor, from this step's amax) | mxfp8 (1x32 blocks along the reduction dimension, E8M0
  // scales) | blockwise (DeepSeek-V3: 1x128 activations and gradients, 128x128 weights) | nvfp4
  // (E2M1 values, an E4M3 scale per 16, an fp32 scale per tensor).
  std::string recipe = "delayed";
  // hybrid: E4M3 forward (activations, weights), E5M2 gradients | e4m3: E4M3 everywhere. nvfp4
  // quantises every operand to E2M1 whatever this says.
  std::string format = "hybrid";
  std::int64_t historyLen = 1024;    // delayed: amax history length (1 = the last step's amax)
  std::string amaxCompute = "max";   // delayed: max | most_recent over the history
  std::int64_t margin = 0;           // delayed / current: scale = (max / amax) / 2^margin
  std::string mxRounding = "fit";    // mxfp8: floor (OCP) | ceil | fit (round up to fit, TE's)
  bool powerOfTwoScales = false;     // blockwise: scales rounded down to powers of two
  bool hadamard = true;              // nvfp4: 16x16 random Hadamard transform on the wgrad operands
  bool stochasticRounding = true;    // nvfp4: gradients rounded stochastically
  // Linear layers kept in bf16, by name or position ("first", "last", "0", "2", "lm_head"),
  // comma-separated; "none" quantises every Linear layer.
  std::string keepBf16 = "first,last";
  std::string overflow = "saturate";  // saturate (Transformer Engine) | inf_nan (E4M3 NaN, E5M2 inf)
  // The accumulation model (labelled a model everywhere): the GEMMs' partial sums kept to
  // accumBits mantissa bits, added into fp32 every accumPromote products. 0: exact fp32.
  std::int64_t accumBits = 0;
  std::int64_t accumPromote = 128;
  // "What if": the statistics a second recipe would give on the same tensors, computed beside
  // training without changing it ("" = none; any fp8.recipe value).
  std::string whatIf;
  // A spike: "STEP:TENSOR:FACTOR" puts FACTOR x the tensor's amax into the first element of
  // TENSOR ("fc2.x", "h.0.mlp.c_fc.dy", a Linear layer's name and x | w | dy) at STEP (1-based),
  // before it is quantised: the lag of delayed scaling, shown.
  std::string injectSpike;
};

}  // namespace amp
