// The fp8 lessons (issue 39): what 8 and 4 bits need, each on the spirals MLP of the underflow
// lesson (Linear 2-64-64-2, tanh, Adam) with every Linear layer quantised (fp8.keep_bf16=none),
// so that each concludes within a minute on a 2-core CPU. Their conclusions are in
// app/gui_lesson_conclusion_fp8.cpp; each variant's label is what the conclusion looks up.
#include "engine/config/presets.h"

namespace amp {

namespace {

// The underflow lesson's spirals MLP, in fp8 with all three Linear layers quantised. The
// layers are named by position: 0 (2->64), 2 (64->64), 4 (64->2); their tensors 0.x, 2.dy, ...
Overrides spiralsFp8(const Overrides& more) {
  Overrides o = {{"model.name", "mlp"},        {"model.hidden", "64,64"},      {"model.activation", "tanh"},
                 {"data.name", "spirals"},     {"data.samples", "2000"},       {"data.noise", "0.05"},
                 {"train.batch_size", "100"},  {"train.steps", "300"},         {"optimizer.name", "adam"},
                 {"optimizer.lr", "0.01"},     {"train.histogram_every", "20"}, {"train.eval_every", "50"},
                 {"amp.mode", "fp8"},          {"fp8.keep_bf16", "none"}};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

}  // namespace

void appendFp8Presets(std::vector<Preset>& v) {
  {
    Preset p{"fp8-needs-a-scale", "fp8 needs a scale",
             "E5M2, fp8's gradient format, holds magnitudes from 2^-16 (1.5e-5) to 57344. The loss "
             "here is weighted by 0.001 (an auxiliary loss's coefficient), so the output layer's "
             "gradients are far smaller than that: stored in fp8 as they are (scale 1) they all "
             "flush to zero and the quantised layers stop learning. A per-tensor scale (current "
             "scaling: max / amax of each tensor) moves them into the format's range, and the run "
             "learns as bf16 does. The fp8 heat map shows the gradients' rows lost.",
             spiralsFp8({{"train.loss_weight", "0.001"}}),
             {{"bf16", {{"amp.mode", "bf16"}}},
              {"fp8_unscaled", {{"fp8.recipe", "unscaled"}}},
              {"fp8_current", {{"fp8.recipe", "current"}}}}};
    p.focus = "activation_grad|fp8:4.dy";  // the output layer's gradient after its (unit) scale
    p.focusVariant = "fp8_unscaled";
    p.focusChart = "fp8-heat";
    v.push_back(std::move(p));
  }
  {
    Preset p{"fp8-outlier", "One outlier ruins a per-tensor scale",
             "At step 40 one value of the hidden layer's input (2.x) becomes 100,000 times the "
             "tensor's largest (fp8.inject_spike), as outlier features in large models do. A "
             "per-tensor E4M3 scale must fit that one value, so every other value of the tensor "
             "lands below E4M3's normal range: a quarter flush to zero, the rest keep a bit or two. "
             "MXFP8 gives each block of 32 values its own power-of-two scale: only the outlier's "
             "block loses its small values. Compare the two runs' heat maps at step 40; the fp8 block "
             "scales tab draws the mxfp8 run's scales over 2.x's shape beside its magnitudes: one block "
             "apart, its own large scale, the others untouched.",
             // The spike at the last step, a histogram step: the histogram ends on the spiked tensor.
             spiralsFp8({{"train.steps", "40"}, {"fp8.format", "e4m3"}, {"fp8.inject_spike", "40:2.x:100000"}}),
             {{"per_tensor", {{"fp8.recipe", "current"}}}, {"mxfp8", {{"fp8.recipe", "mxfp8"}}}}};
    p.focus = "activation|fp8:2.x";  // the spiked tensor after its scale (step 20 is recorded)
    p.focusVariant = "per_tensor";
    p.focusChart = "fp8-heat";
    v.push_back(std::move(p));
  }
  {
    Preset p{"fp8-delayed-lag", "Delayed scaling lags a spike",
             "Delayed scaling (Transformer Engine's default) makes each step's scale from the amax "
             "of earlier steps. At step 20 one value of 2.x jumps to 10,000 times the tensor's "
             "largest: the scale, made before it, is too large, so the spike clips (the triangle). "
             "Then the spike enters the 16-step amax history: with amax_compute=max the scale stays "
             "10,000 times too small for 16 steps and the tensor's small values flush to zero, long "
             "after the spike is gone; with most_recent only the one step after it. The scale "
             "timeline shows amax, the history's max and the scale used; the heat map's what-if box what "
             "MXFP8, scaled per block from each step's own values, would have lost instead.",
             spiralsFp8({{"train.steps", "60"}, {"fp8.recipe", "delayed"}, {"fp8.format", "e4m3"},
                         {"fp8.history_len", "16"}, {"fp8.inject_spike", "20:2.x:10000"},
                         // What MXFP8 would have lost on the same tensors: the heat map's what-if box.
                         {"fp8.what_if", "mxfp8"}}),
             {{"history_max", {{"fp8.amax_compute", "max"}}},
              {"most_recent", {{"fp8.amax_compute", "most_recent"}}}}};
    p.focus = "activation|fp8:2.x";
    p.focusChart = "fp8-scale";
    v.push_back(std::move(p));
  }
  {
    Preset p{"fp8-gradients-e5m2", "Gradients need E5M2's range",
             "Gradients span more binades than activations: as the spirals are learnt, confident "
             "samples give gradients many powers of two below the others. E4M3 holds 17.8 "
             "binades (2^-9 to 448), E5M2 31.8 (2^-16 to 57344) with one mantissa bit less. With "
             "one scale per tensor, E4M3 gradients flush more of their values to zero than the "
             "hybrid recipe's E5M2 ones; with MXFP8's block scales each block of 32 is scaled to "
             "its own amax, and E4M3 everywhere loses less than hybrid and keeps its precision.",
             spiralsFp8({}),
             {{"hybrid", {{"fp8.recipe", "current"}, {"fp8.format", "hybrid"}}},
              {"e4m3", {{"fp8.recipe", "current"}, {"fp8.format", "e4m3"}}},
              {"e4m3_mxfp8", {{"fp8.recipe", "mxfp8"}, {"fp8.format", "e4m3"}}}}};
    p.focus = "activation_grad|fp8:2.dy";
    p.focusVariant = "e4m3";
    p.focusChart = "fp8-heat";
    v.push_back(std::move(p));
  }
  {
    // A small GPT (2 blocks, 64 wide, byte-level; fortunes): 4 bits need a real network's GEMMs,
    // and the spirals MLP showed none of the differences. 40 steps: five runs within a minute.
    // Its claims are measured on the same tensors (the conclusion, app/gui_lesson_conclusion_fp4.cpp):
    // over 40 steps the seed moves this model's validation loss more than the recipe does, so
    // the losses are set against a second bf16 seed and not judged.
    Preset p{"fp4", "Four bits: NVFP4, Hadamard transforms, stochastic rounding",
             "NVFP4 stores each value in 4 bits (E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6) with two levels of "
             "scale: an E4M3 scale per 16 values and an fp32 scale per tensor, about 20 dB of signal over "
             "its rounding noise. NVIDIA's recipe adds two things to the weight-gradient GEMM. A 16x16 "
             "random Hadamard transform (RHT) of its operands spreads a block's outliers over the block; "
             "every tenth step the run quantises those operands both ways from the same values, so what "
             "the transform does here is measured, not guessed. Stochastic rounding of the gradients "
             "removes rounding's bias at the cost of more noise per value. A second bf16 run with another "
             "seed shows how far the loss moves by chance alone: over 40 steps, further than the recipes "
             "move it.",
             {{"model.name", "gpt"}, {"model.layers", "2"}, {"model.heads", "2"}, {"model.embd", "64"},
              {"model.block", "64"}, {"data.name", "text"}, {"optimizer.name", "adamw"},
              {"optimizer.lr", "0.003"}, {"optimizer.beta2", "0.99"}, {"optimizer.weight_decay", "0"},
              {"train.batch_size", "16"}, {"train.steps", "40"}, {"train.eval_every", "20"},
              {"train.histogram_every", "10"}, {"amp.mode", "fp8"}, {"fp8.recipe", "nvfp4"},
              {"fp8.keep_bf16", "none"}},
             {{"bf16", {{"amp.mode", "bf16"}}},
              // The yardstick: bf16 again, only the seed differs (weights, batches: all of it).
              {"bf16_other_seed", {{"amp.mode", "bf16"}, {"seed", "7919"}}},
              {"nvfp4", {{"fp8.hadamard", "false"}, {"fp8.stochastic_rounding", "false"}}},
              {"nvfp4_rht", {{"fp8.hadamard", "true"}, {"fp8.stochastic_rounding", "false"}}},
              {"nvfp4_rht_sr", {{"fp8.hadamard", "true"}, {"fp8.stochastic_rounding", "true"}}}}};
    p.focus = "weight_grad|transformer.h.0.attn.c_attn.weight";
    p.focusVariant = "nvfp4";
    p.focusChart = "loss";
    v.push_back(std::move(p));
  }
  {
    // The weight-gradient GEMM reduces over the batch: 1000 samples make it a long reduction.
    Preset p{"fp8-accumulator", "The accumulator (a model)",
             "A MODEL of a GEMM's accumulator, not a measurement of a GPU: fp8.accum_bits keeps the "
             "partial sums to 6 mantissa bits (truncated after every addition), as a tensor core's "
             "narrow accumulator does (DeepSeek-V3 reports about 14 bits on Hopper). The weight "
             "gradient sums 1000 per-sample products here: once the running sum is 64 times a "
             "product, that product is lost, and the run learns little. Promoting the partial sum "
             "into fp32 every 128 products (DeepSeek-V3's fix) restores them: the loss comes back "
             "close to the exact fp32 accumulation's.",
             spiralsFp8({{"data.samples", "4000"}, {"train.batch_size", "1000"}, {"train.steps", "150"},
                         {"train.histogram_every", "50"}, {"fp8.recipe", "current"}}),
             {{"exact_fp32", {{"fp8.accum_bits", "0"}}},
              {"acc6_no_promotion", {{"fp8.accum_bits", "6"}, {"fp8.accum_promote", "1000000"}}},
              {"acc6_promote128", {{"fp8.accum_bits", "6"}, {"fp8.accum_promote", "128"}}}}};
    p.focus = "weight_grad|0.weight";
    p.focusVariant = "acc6_no_promotion";
    p.focusChart = "loss";
    v.push_back(std::move(p));
  }
}

}  // namespace amp
