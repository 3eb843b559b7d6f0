// Everything that defines one training run. Plain data: the schema (config_schema.h) reads and
// writes it by dotted key ("scaler.growth_interval"), for JSON files, --set, presets and the UI.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/amp/fp8_config.h"
#include "engine/amp/scaler_config.h"
#include "engine/data/dataset.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"

namespace amp {

// More CPU threads than any machine this runs on has cores (validateRunConfig refuses more).
inline constexpr int kMaxTrainThreads = 1024;


enum class PrecisionMode : std::uint8_t {
  Fp32,      // no autocast
  AmpFp16,   // autocast fp16 + fp32 master weights (+ loss scaling)
  AmpBf16,   // autocast bf16 + fp32 master weights (a scaler is allowed but has no effect)
  PureFp16,  // parameters, gradients and activations in fp16, no master weights (Apex O3-like)
  Fp8,       // bf16 autocast, the Linear layers' GEMMs on fp8 / block-scaled operands (fp8.*)
};

std::string_view precisionModeName(PrecisionMode m);  // "fp32", "fp16", "bf16", "pure_fp16"
std::optional<PrecisionMode> parsePrecisionMode(std::string_view s);

struct ModelConfig {
  // recipe_mlp: the PyTorch AMP recipe's MLP (width x width Linear layers, ReLU between).
  // mlp: a classifier/regressor MLP with `hidden` sizes. cnn: conv/pool/fc blocks from `cnn`.
  // resnet: a residual network (depth, baseWidth, stem below) for image classification.
  std::string name = "recipe_mlp";
  std::int64_t width = 1024;
  int layers = 3;
  std::vector<std::int64_t> hidden{256, 256};
  std::string activation = "relu";  // relu | tanh | sigmoid | gelu
  double dropout = 0.0;             // mlp: dropout after each hidden activation
  bool batchnorm = false;           // mlp/cnn: BatchNorm after each hidden linear/conv
  // cnn blocks: conv:C (3x3, padding 1, then activation), pool (2x2 max), fc:N (then act.);
  // a final fc to the number of classes is appended.
  std::string cnn = "conv:32,pool,conv:64,pool,fc:128";
  // resnet: 6n+2 (20, 32, 44, 56, 110) = the CIFAR ResNets (3 stages of n basic blocks, widths
  // w/2w/4w, w = 16); 18 or 34 = the ImageNet layouts (4 stages of 2,2,2,2 or 3,4,6,3 blocks,
  // w/2w/4w/8w, w = 64). baseWidth 0 = the layout's w. stem: cifar (3x3 conv, stride 1), imagenet
  // (7x7 stride 2 + 3x3 max-pool stride 2), auto = imagenet for the 18/34 layouts on inputs larger
  // than 64x64, else cifar.
  int depth = 20;
  std::int64_t baseWidth = 0;
  std::string stem = "auto";
  // gpt: nanoGPT's layout (gpt_builder.h): `layers` blocks of `heads` heads, `embd` wide, a
  // context of `block` tokens; byte-level (256 tokens), the LM head tied to the token embedding.
  std::int64_t heads = 4, embd = 128, block = 128;
};

struct TrainConfig {
  std::int64_t steps = 100;  // optimizer steps; 0 = use epochs
  int epochs = 0;
  std::int64_t batchSize = 256;
  int accumulation = 1;            // micro-batches per optimizer step
  double clipNorm = 0.0;           // 0 = no clipping; else clip_grad_norm_ after unscale
  std::string loss = "auto";       // auto (cross_entropy for labels, mse for targets) | cross_entropy | mse
  double lossWeight = 1.0;         // multiplies the loss (a small auxiliary-loss coefficient)
  int histogramEvery = 50;         // record exponent histograms every K steps (0 = never)
  std::int64_t evalEvery = 0;      // evaluate every N steps (0 = once per epoch)
  std::string onDivergence = "stop";  // stop | continue
  std::vector<std::int64_t> injectNonFinite;  // 1-based steps with a forced inf gradient
  std::string injectParam;         // parameter to corrupt ("" = the last weight)
  std::string postUnscaleCheck = "warn";  // warn | skip: non-finite after unscale (scale < 1)
  int threads = 0;                 // 0 = all cores; at most kMaxTrainThreads
};

// Data-parallel runs (engine/dist): what the ranks share is set by mpirun; these shape a run.
struct DistConfig {
  // Ranks to start through mpirun: the app and a preset's variant launch `mpirun -np ranks
  // ampstudio-cli run` and follow its folder; 1 trains in this process.
  int ranks = 1;
  int injectRank = -1;       // train.inject_nonfinite acts on this rank only (-1: every rank)
  double bucketMb = 25;      // gradients all-reduced in buckets of this many MiB (DDP's default)
  double timeoutS = 300;     // a collective that takes longer ends every rank with a message
  int killRank = -1;         // ampstudio-cli: this rank exits at step killStep (-1: none): a rank dying, shown
  std::int64_t killStep = 0;
};

struct CheckpointConfig {
  std::int64_t every = 0;  // checkpoint every N steps (0 = only at the end if `atEnd`)
  bool atEnd = false;
};

struct RunConfig {
  std::string name;  // shown in run tables; default derived from preset and mode
  std::uint64_t seed = 0;
  PrecisionMode mode = PrecisionMode::Fp32;
  std::string backend = "auto";  // auto (the GPU when one is usable) | cpu | cuda
  bool tf32 = false;  // fp32 GEMMs on the GPU may use TF32 tensor cores (PyTorch's allow_tf32)
  // 16-bit GEMMs on the GPU may reduce split-K partial sums in fp16/bf16 (PyTorch's
  // allow_fp16/bf16_reduced_precision_reduction, true by default there). Off: fp32 accumulation
  // throughout and one rounding, our promise.
  bool reducedPrecisionReduction = false;
  ScalerConfig scaler;
  // auto: a scaler for fp16 and pure_fp16, none for fp32 and bf16 (PyTorch's recipe:
  // GradScaler(enabled=use_fp16)); true/false force it (a scaler on bf16 runs but changes
  // nothing that matters: bf16 has fp32's range).
  std::string scalerEnabled = "auto";
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  ModelConfig model;
  DataOptions data;
  TrainConfig train;
  CheckpointConfig checkpoint;
  DistConfig dist;
  std::map<std::string, std::string> autocastOverrides;  // op -> policy name
  Fp8Config fp8;  // amp.mode=fp8 only

  bool usesAutocast() const {
    return mode == PrecisionMode::AmpFp16 || mode == PrecisionMode::AmpBf16 || mode == PrecisionMode::Fp8;
  }
  DType lowDtype() const {
    return mode == PrecisionMode::AmpBf16 || mode == PrecisionMode::Fp8 ? DType::BF16 : DType::F16;
  }
  // The dtype the GEMMs and convolutions compute in: fp32, or the 16-bit type of AMP / pure fp16.
  DType computeDtype() const { return mode == PrecisionMode::Fp32 ? DType::F32 : lowDtype(); }
  bool hasMasterWeights() const { return mode != PrecisionMode::PureFp16; }
  bool scalerActive() const {
    if (scalerEnabled == "auto") return mode == PrecisionMode::AmpFp16 || mode == PrecisionMode::PureFp16;
    return scalerEnabled == "true";
  }
  // A run recorded outside AMP Studio (the PyTorch probe, a TensorBoard import): its model or data
  // is "external", so it can be shown and compared but never trained or resumed here.
  bool isExternal() const { return model.name == "external" || data.name == "external"; }
  std::string displayName() const;
};

}  // namespace amp
