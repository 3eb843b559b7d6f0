#include "engine/config/config_schema.h"

#include "engine/amp/fp8_context.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>
#include <cstdlib>
#include <sstream>

#include "engine/amp/autocast_policy.h"

namespace amp {

namespace {

[[noreturn]] void fail(const std::string& key, const std::string& expected, const std::string& got) {
  throw ConfigError(key + ": expected " + expected + ", got " + shownValue(got));
}

std::int64_t parseInt(const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  // Accept "3.0" from JSON numbers written as floats, but not 3.5. (strtod gets its own end:
  // sharing strtoll's let "3.5" and "1.5e300" through as 3 and 1, found by fuzzing.)
  if (end && *end == '.') {
    char* dend = nullptr;
    const double d = std::strtod(v.c_str(), &dend);
    if (*dend == 0 && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<std::int64_t>(d);
  }
  if (v.empty() || errno || !end || *end) fail(key, "an integer", v);
  return x;
}

double parseNumber(const std::string& key, const std::string& v) {
  // from_chars ignores the locale (strtod would read "0.5" as 0 under a German locale).
  std::string_view s(v);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double x = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) fail(key, "a number", v);
  return x;
}

bool parseBool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  fail(key, "true or false", v);
}

std::vector<std::int64_t> parseIntList(const std::string& key, const std::string& v) {
  std::vector<std::int64_t> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    out.push_back(parseInt(key, item));
  }
  return out;
}

std::string numberText(double x) {
  std::ostringstream os;
  os.precision(17);
  os << x;
  return os.str();
}

std::string listText(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string choiceOf(const std::string& key, const std::string& v,
                     const std::vector<std::string>& choices) {
  for (const auto& c : choices)
    if (c == v) return v;
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i) list += (i ? " | " : "") + choices[i];
  fail(key, "one of " + list, v);
}

// An integer that fits the member it goes to: a cast would wrap (model.layers=4294967299 trained
// 3 layers) or turn seed=-1 into another seed, and the saved config would not say so.
// An unsigned 64-bit key (the seed) takes all of its range: "18446744073709551615" is too large
// for parseInt's strtoll, so non-negative text is read with strtoull.
std::uint64_t parseUnsigned(const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (errno || !end || *end) fail(key, "an integer", v);
  return x;
}

template <class T>
T inRange(const std::string& key, const std::string& v, std::int64_t x) {
  const bool low = std::is_signed_v<T> ? x < std::int64_t(std::numeric_limits<T>::min()) : x < 0;
  const bool high = x >= 0 && std::uint64_t(x) > std::uint64_t(std::numeric_limits<T>::max());
  if (low || high)
    fail(key, "an integer from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
                  std::to_string(std::numeric_limits<T>::max()),
         v);
  return static_cast<T>(x);
}

// Table-building helpers: a key bound to a member through a pointer-returning lambda.
template <class Get>
ConfigKey intKey(std::string key, std::string help, Get ref) {
  return {key, "int", std::move(help), {},
          [key, ref](RunConfig& c, const std::string& v) {
            using T = std::remove_reference_t<decltype(*ref(c))>;
            if constexpr (std::is_same_v<T, std::uint64_t>) {
              const bool digitsOnly = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
              if (digitsOnly && v.size() >= 19) {  // beyond what strtoll holds for sure
                *ref(c) = parseUnsigned(key, v);
                return;
              }
            }
            *ref(c) = inRange<T>(key, v, parseInt(key, v));
          },
          [ref](const RunConfig& c) { return std::to_string(*ref(const_cast<RunConfig&>(c))); }};
}
template <class Get>
ConfigKey numKey(std::string key, std::string help, Get ref) {
  return {key, "number", std::move(help), {},
          [key, ref](RunConfig& c, const std::string& v) { *ref(c) = parseNumber(key, v); },
          [ref](const RunConfig& c) { return numberText(*ref(const_cast<RunConfig&>(c))); }};
}
template <class Get>
ConfigKey boolKey(std::string key, std::string help, Get ref) {
  return {key, "bool", std::move(help), {},
          [key, ref](RunConfig& c, const std::string& v) { *ref(c) = parseBool(key, v); },
          [ref](const RunConfig& c) { return std::string(*ref(const_cast<RunConfig&>(c)) ? "true" : "false"); }};
}
template <class Get>
ConfigKey strKey(std::string key, std::string help, Get ref) {
  return {key, "string", std::move(help), {},
          [key, ref](RunConfig& c, const std::string& v) {
            // Names, paths and columns: a path is at most 4096 bytes on Linux, and a 300 MB name
            // took 2.8 GB on its way through the run before anything refused it.
            if (v.size() > kMaxStringValueBytes)
              fail(key, "at most " + std::to_string(kMaxStringValueBytes) + " bytes", v);
            *ref(c) = v;
          },
          [ref](const RunConfig& c) { return *ref(const_cast<RunConfig&>(c)); }};
}
template <class Get>
ConfigKey choiceKey(std::string key, std::string help, std::vector<std::string> choices, Get ref) {
  return {key, "choice", std::move(help), choices,
          [key, ref, choices](RunConfig& c, const std::string& v) { *ref(c) = choiceOf(key, v, choices); },
          [ref](const RunConfig& c) { return *ref(const_cast<RunConfig&>(c)); }};
}
template <class Get>
ConfigKey listKey(std::string key, std::string help, Get ref) {
  return {key, "int_list", std::move(help), {},
          [key, ref](RunConfig& c, const std::string& v) { *ref(c) = parseIntList(key, v); },
          [ref](const RunConfig& c) { return listText(*ref(const_cast<RunConfig&>(c))); }};
}

std::vector<ConfigKey> buildKeys() {
  std::vector<ConfigKey> k;
  k.push_back(strKey("name", "run name shown in tables (default: preset and mode)", [](RunConfig& c) { return &c.name; }));
  k.push_back(intKey("seed", "seed of weights, data, shuffling and dropout (0 to 2^64-1; written exactly)", [](RunConfig& c) { return &c.seed; }));
  k.push_back({"amp.mode", "choice", "precision: fp32 | fp16 (AMP) | bf16 (AMP) | pure_fp16 (no master weights) | fp8 (bf16 AMP, Linear GEMMs in fp8 / fp4: fp8.*)",
               {"fp32", "fp16", "bf16", "pure_fp16", "fp8"},
               [](RunConfig& c, const std::string& v) {
                 auto m = parsePrecisionMode(v);
                 if (!m) fail("amp.mode", "one of fp32 | fp16 | bf16 | pure_fp16 | fp8", v);
                 c.mode = *m;
               },
               [](const RunConfig& c) { return std::string(precisionModeName(c.mode)); }});
  k.push_back(choiceKey("fp8.recipe", "amp.mode=fp8: delayed (per-tensor, amax history) | current (per-tensor, this step's amax) | unscaled (per-tensor, scale 1: fp8 without scaling) | mxfp8 (1x32 blocks, E8M0 scales) | blockwise (1x128 / 128x128, DeepSeek-V3) | nvfp4 (E2M1, E4M3 scale per 16, fp32 per tensor)", {"delayed", "current", "unscaled", "mxfp8", "blockwise", "nvfp4"}, [](RunConfig& c) { return &c.fp8.recipe; }));
  k.push_back(choiceKey("fp8.format", "fp8: hybrid (E4M3 forward, E5M2 gradients) | e4m3 (everywhere)", {"hybrid", "e4m3"}, [](RunConfig& c) { return &c.fp8.format; }));
  k.push_back(intKey("fp8.history_len", "fp8 delayed: amax history length in steps (>= 1)", [](RunConfig& c) { return &c.fp8.historyLen; }));
  k.push_back(choiceKey("fp8.amax_compute", "fp8 delayed: max | most_recent over the history", {"max", "most_recent"}, [](RunConfig& c) { return &c.fp8.amaxCompute; }));
  k.push_back(intKey("fp8.margin", "fp8 delayed / current: scale = (max / amax) / 2^margin", [](RunConfig& c) { return &c.fp8.margin; }));
  k.push_back(choiceKey("fp8.mx_rounding", "mxfp8 shared exponent: floor (OCP; clips 448..512) | ceil | fit (round up to fit: Transformer Engine)", {"floor", "ceil", "fit"}, [](RunConfig& c) { return &c.fp8.mxRounding; }));
  k.push_back(boolKey("fp8.pow2_scales", "fp8 blockwise: scales rounded down to powers of two", [](RunConfig& c) { return &c.fp8.powerOfTwoScales; }));
  k.push_back(boolKey("fp8.hadamard", "nvfp4: 16x16 random Hadamard transform on the weight-gradient GEMM's operands", [](RunConfig& c) { return &c.fp8.hadamard; }));
  k.push_back(boolKey("fp8.stochastic_rounding", "nvfp4: gradients rounded stochastically (seeded: reproducible)", [](RunConfig& c) { return &c.fp8.stochasticRounding; }));
  k.push_back(strKey("fp8.keep_bf16", "fp8: Linear layers kept in bf16, by name or 0-based position, or first / last; none = quantise all", [](RunConfig& c) { return &c.fp8.keepBf16; }));
  k.push_back(choiceKey("fp8.overflow", "fp8 casts past the format's range: saturate (Transformer Engine) | inf_nan (E5M2 inf, E4M3 NaN)", {"saturate", "inf_nan"}, [](RunConfig& c) { return &c.fp8.overflow; }));
  k.push_back(intKey("fp8.accum_bits", "fp8 accumulation MODEL: partial sums kept to N mantissa bits (0 = exact fp32 accumulation, the default)", [](RunConfig& c) { return &c.fp8.accumBits; }));
  k.push_back(intKey("fp8.accum_promote", "fp8 accumulation model: partial sums added into fp32 every K products", [](RunConfig& c) { return &c.fp8.accumPromote; }));
  k.push_back(strKey("fp8.what_if", "fp8: also measure another recipe on the same tensors without training with it (\"\" = none)", [](RunConfig& c) { return &c.fp8.whatIf; }));
  k.push_back(strKey("fp8.inject_spike", "fp8: STEP:TENSOR:FACTOR puts FACTOR x amax into TENSOR (layer.x | .w | .dy) at STEP", [](RunConfig& c) { return &c.fp8.injectSpike; }));
  k.push_back(choiceKey("backend", "compute backend: auto (the GPU when one is usable) | cpu | cuda", {"auto", "cpu", "cuda"}, [](RunConfig& c) { return &c.backend; }));
  k.push_back(boolKey("tf32", "fp32 GEMMs on the GPU may use TF32 tensor cores (off: full fp32, as PyTorch's default)", [](RunConfig& c) { return &c.tf32; }));
  k.push_back(boolKey("reduced_precision_reduction", "16-bit GEMMs on the GPU may add split-K partial sums in fp16/bf16, as PyTorch does by default (off: fp32 accumulation and one rounding)", [](RunConfig& c) { return &c.reducedPrecisionReduction; }));
  k.push_back({"scaler.kind", "choice", "loss scaler: dynamic (PyTorch) | static | none | apex_dynamic | hysteresis",
               {"dynamic", "static", "none", "apex_dynamic", "hysteresis"},
               [](RunConfig& c, const std::string& v) {
                 auto s = parseScalerKind(v);
                 if (!s) fail("scaler.kind", "one of dynamic | static | none | apex_dynamic | hysteresis", v);
                 c.scaler.kind = *s;
               },
               [](const RunConfig& c) { return std::string(scalerKindName(c.scaler.kind)); }});
  k.push_back(choiceKey("scaler.enabled", "auto (on for fp16 and pure_fp16) | true | false", {"auto", "true", "false"}, [](RunConfig& c) { return &c.scalerEnabled; }));
  k.push_back(numKey("scaler.init_scale", "initial loss scale (PyTorch: 65536)", [](RunConfig& c) { return &c.scaler.initScale; }));
  k.push_back(numKey("scaler.growth_factor", "scale multiplier after growth_interval clean steps (> 1)", [](RunConfig& c) { return &c.scaler.growthFactor; }));
  k.push_back(numKey("scaler.backoff_factor", "scale multiplier on overflow (in (0, 1))", [](RunConfig& c) { return &c.scaler.backoffFactor; }));
  k.push_back(intKey("scaler.growth_interval", "clean steps before the scale grows (PyTorch: 2000)", [](RunConfig& c) { return &c.scaler.growthInterval; }));
  k.push_back(numKey("scaler.min_scale", "apex_dynamic / hysteresis: lowest scale", [](RunConfig& c) { return &c.scaler.minScale; }));
  k.push_back(numKey("scaler.max_scale", "apex_dynamic: highest scale (2^24)", [](RunConfig& c) { return &c.scaler.maxScale; }));
  k.push_back(intKey("scaler.hysteresis", "hysteresis: overflows absorbed before backing off", [](RunConfig& c) { return &c.scaler.hysteresis; }));
  k.push_back(choiceKey("optimizer.name", "sgd | adam | adamw", {"sgd", "adam", "adamw"}, [](RunConfig& c) { return &c.optimizer.name; }));
  k.push_back(numKey("optimizer.lr", "learning rate", [](RunConfig& c) { return &c.optimizer.lr; }));
  k.push_back(numKey("optimizer.momentum", "sgd momentum", [](RunConfig& c) { return &c.optimizer.momentum; }));
  k.push_back(boolKey("optimizer.nesterov", "sgd Nesterov momentum", [](RunConfig& c) { return &c.optimizer.nesterov; }));
  k.push_back(numKey("optimizer.weight_decay", "L2 (sgd, adam) or decoupled (adamw) weight decay", [](RunConfig& c) { return &c.optimizer.weightDecay; }));
  k.push_back(numKey("optimizer.beta1", "adam beta1", [](RunConfig& c) { return &c.optimizer.beta1; }));
  k.push_back(numKey("optimizer.beta2", "adam beta2", [](RunConfig& c) { return &c.optimizer.beta2; }));
  k.push_back(numKey("optimizer.eps", "adam epsilon", [](RunConfig& c) { return &c.optimizer.eps; }));
  k.push_back(choiceKey("schedule.name", "learning-rate schedule: constant | step | cosine", {"constant", "step", "cosine"}, [](RunConfig& c) { return &c.schedule.name; }));
  k.push_back(intKey("schedule.step_size", "step: decay every N scheduler steps", [](RunConfig& c) { return &c.schedule.stepSize; }));
  k.push_back(numKey("schedule.gamma", "step: decay factor", [](RunConfig& c) { return &c.schedule.gamma; }));
  k.push_back(intKey("schedule.warmup_steps", "cosine: linear warm-up steps", [](RunConfig& c) { return &c.schedule.warmupSteps; }));
  k.push_back(numKey("schedule.min_lr", "cosine: final learning rate", [](RunConfig& c) { return &c.schedule.minLr; }));
  k.push_back(choiceKey("model.name", "recipe_mlp | mlp | cnn | resnet | gpt (a byte-level transformer language model: data.name=text or a sequence task) | external (a run recorded outside AMP Studio: the PyTorch probe, a TensorBoard import; shown and compared, never trained here)", {"recipe_mlp", "mlp", "cnn", "resnet", "gpt", "external"}, [](RunConfig& c) { return &c.model.name; }));
  k.push_back(intKey("model.width", "recipe_mlp: width of every layer", [](RunConfig& c) { return &c.model.width; }));
  k.push_back(intKey("model.layers", "recipe_mlp: number of Linear layers; gpt: number of transformer blocks", [](RunConfig& c) { return &c.model.layers; }));
  k.push_back(intKey("model.heads", "gpt: attention heads per block (model.embd must divide by it)", [](RunConfig& c) { return &c.model.heads; }));
  k.push_back(intKey("model.embd", "gpt: width of the token rows (embedding size)", [](RunConfig& c) { return &c.model.embd; }));
  k.push_back(intKey("model.block", "gpt: context in tokens (bytes); each training sample is a window of block + 1 bytes", [](RunConfig& c) { return &c.model.block; }));
  k.push_back(listKey("model.hidden", "mlp: hidden layer sizes, e.g. 256,256", [](RunConfig& c) { return &c.model.hidden; }));
  k.push_back(choiceKey("model.activation", "relu | tanh | sigmoid | gelu", {"relu", "tanh", "sigmoid", "gelu"}, [](RunConfig& c) { return &c.model.activation; }));
  k.push_back(numKey("model.dropout", "mlp: dropout probability after hidden activations", [](RunConfig& c) { return &c.model.dropout; }));
  k.push_back(boolKey("model.batchnorm", "BatchNorm after hidden linear/conv layers", [](RunConfig& c) { return &c.model.batchnorm; }));
  k.push_back(strKey("model.cnn", "cnn blocks, e.g. conv:32,pool,conv:64,pool,fc:128", [](RunConfig& c) { return &c.model.cnn; }));
  k.push_back(intKey("model.depth", "resnet: 6n+2 (20, 32, 44, 56, 110: CIFAR ResNets, 3 stages) or 18, 34 (4 stages)", [](RunConfig& c) { return &c.model.depth; }));
  k.push_back(intKey("model.base_width", "resnet: channels of the first stage, doubled per stage (0 = 16 for 6n+2, 64 for 18/34)", [](RunConfig& c) { return &c.model.baseWidth; }));
  k.push_back(choiceKey("model.stem", "resnet: auto | cifar (3x3 conv) | imagenet (7x7/2 conv + 3x3/2 max-pool)", {"auto", "cifar", "imagenet"}, [](RunConfig& c) { return &c.model.stem; }));
  k.push_back(choiceKey("data.name", "synthetic | fmnist | cifar10 | images (a folder, one sub-folder per class) | spirals | circles | blobs | csv | text (bytes of a text file as tokens: first 90% train, last 10% validation) | copy | reverse | sort | add (generated sequence tasks, no corpus needed: copy, reverse or sort a short string; add two numbers) | external (the data of a run recorded outside AMP Studio)", {"synthetic", "fmnist", "cifar10", "images", "spirals", "circles", "blobs", "csv", "text", "copy", "reverse", "sort", "add", "external"}, [](RunConfig& c) { return &c.data.name; }));
  k.push_back(strKey("data.path", "fmnist folder (default /usr/share/datasets/fashion-mnist), csv file, cifar10 folder (data_batch_1.bin ... test_batch.bin, or its parent), images training folder (one sub-folder per class) or text file, or folder of text files read in name order (default /usr/share/games/fortunes/fortunes)", [](RunConfig& c) { return &c.data.path; }));
  k.push_back(strKey("data.test_path", "images: a test folder with the same class sub-folders (empty: hold out data.test_fraction of each class)", [](RunConfig& c) { return &c.data.testPath; }));
  k.push_back(intKey("data.image_size", "images: every image resized (antialiased) to N x N pixels, 1 to 1024", [](RunConfig& c) { return &c.data.imageSize; }));
  k.push_back(intKey("data.channels", "images: 3 (RGB) | 1 (grayscale, ITU-R 601 luma)", [](RunConfig& c) { return &c.data.channels; }));
  k.push_back(intKey("data.pad_to", "fmnist, cifar10, images: zero-pad the images centred to N x N before normalising (0 = off; e.g. 32 for Fashion-MNIST's 28x28 in a ResNet)", [](RunConfig& c) { return &c.data.padTo; }));
  k.push_back(intKey("data.augment_crop", "training batches: random crop after zero-padding by N pixels on each side (0 = off; 4 for CIFAR ResNets)", [](RunConfig& c) { return &c.data.augmentCrop; }));
  k.push_back(boolKey("data.augment_flip", "training batches: horizontal flip with probability 1/2", [](RunConfig& c) { return &c.data.augmentFlip; }));
  k.push_back(choiceKey("data.cache", "images: keep the decoded, resized images in ~/.cache/ampstudio/images: on | off", {"on", "off"}, [](RunConfig& c) { return &c.data.cache; }));
  k.push_back(intKey("data.subset", "train on a random N of the training samples, the same N for the same seed (0 = all); the test set is data.test_subset's", [](RunConfig& c) { return &c.data.subset; }));
  k.push_back(intKey("data.test_subset", "evaluate on a random N of the test samples, the same N for the same seed (0 = all)", [](RunConfig& c) { return &c.data.testSubset; }));
  k.push_back(choiceKey("data.device_cache", "keep the training set on the device: auto (GPU, when it fits) | on | off", {"auto", "on", "off"}, [](RunConfig& c) { return &c.data.deviceCache; }));
  k.push_back(choiceKey("data.normalize", "image data: unit (x/255) | standard (fmnist: mean 0.2860, std 0.3530; cifar10, images: per-channel mean/std of the training split) | none (0..255)", {"unit", "standard", "none"}, [](RunConfig& c) { return &c.data.normalize; }));
  k.push_back(numKey("data.test_fraction", "generated sets (also the sequence tasks' test examples), csv and images without data.test_path: held-out share", [](RunConfig& c) { return &c.data.testFraction; }));
  k.push_back(intKey("data.samples", "generated sets: number of points (0 = 1000); copy, reverse, sort, add: number of examples (0 = 20000)", [](RunConfig& c) { return &c.data.samples; }));
  k.push_back(numKey("data.noise", "generated sets: noise", [](RunConfig& c) { return &c.data.noise; }));
  k.push_back(intKey("data.classes", "blobs: number of classes", [](RunConfig& c) { return &c.data.classes; }));
  k.push_back(intKey("data.batches", "synthetic: number of distinct batches", [](RunConfig& c) { return &c.data.batches; }));
  k.push_back(strKey("data.label_column", "csv: label column name or index (default: last)", [](RunConfig& c) { return &c.data.labelColumn; }));
  k.push_back(choiceKey("data.header", "csv: is line 1 a header? auto (names only: a header; numbers, or class names in the label column: data; anything else is refused as ambiguous) | yes | no", {"auto", "yes", "no"}, [](RunConfig& c) { return &c.data.csvHeader; }));
  k.push_back(intKey("train.steps", "optimizer steps (0 = run train.epochs)", [](RunConfig& c) { return &c.train.steps; }));
  k.push_back(intKey("train.epochs", "epochs when train.steps is 0", [](RunConfig& c) { return &c.train.epochs; }));
  k.push_back(intKey("train.batch_size", "samples per micro-batch", [](RunConfig& c) { return &c.train.batchSize; }));
  k.push_back(intKey("train.accumulation", "micro-batches per optimizer step (gradient accumulation)", [](RunConfig& c) { return &c.train.accumulation; }));
  k.push_back(numKey("train.clip_norm", "clip_grad_norm_ max norm after unscale (0 = off)", [](RunConfig& c) { return &c.train.clipNorm; }));
  k.push_back(choiceKey("train.loss", "auto | cross_entropy | mse", {"auto", "cross_entropy", "mse"}, [](RunConfig& c) { return &c.train.loss; }));
  k.push_back(numKey("train.loss_weight", "multiplies the backpropagated loss (small values push gradients below fp16's range); the reported loss is unweighted", [](RunConfig& c) { return &c.train.lossWeight; }));
  k.push_back(intKey("train.histogram_every", "record exponent histograms every K steps (0 = never)", [](RunConfig& c) { return &c.train.histogramEvery; }));
  k.push_back(intKey("train.eval_every", "evaluate on the test set every N steps (0 = each epoch)", [](RunConfig& c) { return &c.train.evalEvery; }));
  k.push_back(choiceKey("train.on_divergence", "stop | continue when the loss or weights go non-finite", {"stop", "continue"}, [](RunConfig& c) { return &c.train.onDivergence; }));
  k.push_back(listKey("train.inject_nonfinite", "1-based steps whose gradient is forced to inf, e.g. 2,7", [](RunConfig& c) { return &c.train.injectNonFinite; }));
  k.push_back(strKey("train.inject_param", "parameter to corrupt (default: the last weight)", [](RunConfig& c) { return &c.train.injectParam; }));
  k.push_back(choiceKey("train.post_unscale_check", "warn | skip on gradients non-finite only after unscaling", {"warn", "skip"}, [](RunConfig& c) { return &c.train.postUnscaleCheck; }));
  k.push_back(intKey("train.threads", "CPU threads (0 = this run's share of the cores, its own loops on fewer while that is faster on a busy machine; at most 1024)", [](RunConfig& c) { return &c.train.threads; }));
  k.push_back(intKey("checkpoint.every", "write a checkpoint every N steps (0 = off)", [](RunConfig& c) { return &c.checkpoint.every; }));
  k.push_back(boolKey("checkpoint.at_end", "write a checkpoint when the run ends", [](RunConfig& c) { return &c.checkpoint.atEnd; }));
  k.push_back(intKey("dist.ranks", "data-parallel ranks: more than 1 starts them through Open MPI's mpirun (the app and a preset's variant; the CLI also takes --ranks N, or runs as mpirun -np N ampstudio-cli run)", [](RunConfig& c) { return &c.dist.ranks; }));
  k.push_back(intKey("dist.inject_rank", "data-parallel runs: train.inject_nonfinite corrupts this rank's gradient only (-1: every rank)", [](RunConfig& c) { return &c.dist.injectRank; }));
  k.push_back(numKey("dist.bucket_mb", "data-parallel runs: gradients are all-reduced in buckets of this many MiB (DDP: 25)", [](RunConfig& c) { return &c.dist.bucketMb; }));
  k.push_back(numKey("dist.timeout_s", "data-parallel runs: a collective that takes longer than this ends every rank with a message (a rank died or hangs)", [](RunConfig& c) { return &c.dist.timeoutS; }));
  k.push_back(intKey("dist.kill_rank", "data-parallel runs: this rank exits at step dist.kill_step, to show what a dying rank does (-1: none)", [](RunConfig& c) { return &c.dist.killRank; }));
  k.push_back(intKey("dist.kill_step", "data-parallel runs: the step at which dist.kill_rank exits", [](RunConfig& c) { return &c.dist.killStep; }));
  return k;
}

}  // namespace

const std::vector<ConfigKey>& configKeys() {
  static const std::vector<ConfigKey> keys = buildKeys();
  return keys;
}

const ConfigKey* findConfigKey(const std::string& key) {
  for (const auto& k : configKeys())
    if (k.key == key) return &k;
  return nullptr;
}

std::string shownValue(std::string_view value, std::size_t max) {
  std::string out = "'";
  std::size_t shown = 0;
  for (unsigned char ch : value) {
    if (shown++ == max) {
      out += "…' (" + std::to_string(value.size()) + " bytes)";
      return out;
    }
    if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else if (ch < 0x20 || ch == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "'";
}

void setConfigValue(RunConfig& c, const std::string& key, const std::string& value) {
  if (key.rfind("autocast.", 0) == 0) {
    const std::string op = key.substr(9);
    if (op.empty() || !parseCastPolicy(value))
      fail(key, "lower_precision | fp32 | fp32_output | promote | pass_through | banned", value);
    if (!AutocastPolicy::isKnownOp(op))
      throw ConfigError(shownValue(key) + ": no op " + shownValue(op) +
                        " in autocast's lists or our layers (did you mean autocast." +
                        AutocastPolicy::nearestKnownOp(op) + "?)");
    c.autocastOverrides[op] = value;
    return;
  }
  const ConfigKey* k = findConfigKey(key);
  if (!k) throw ConfigError("unknown config key " + shownValue(key) + " (see the README's key list)");
  k->set(c, value);
}

void applyOverride(RunConfig& c, const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set expects key=value, got " + shownValue(kv));
  setConfigValue(c, kv.substr(0, eq), kv.substr(eq + 1));
}

std::vector<std::pair<std::string, std::string>> flattenConfig(const RunConfig& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : configKeys()) out.emplace_back(k.key, k.get(c));
  for (const auto& [op, p] : c.autocastOverrides) out.emplace_back("autocast." + op, p);
  return out;
}

std::optional<std::string> validateRunConfig(const RunConfig& c) {
  const auto& t = c.train;
  if (t.steps < 0) return "train.steps must be >= 0";
  if (t.steps == 0 && t.epochs <= 0) return "train.epochs must be > 0 when train.steps is 0";
  if (t.epochs < 0) return "train.epochs must be >= 0";
  if (t.batchSize <= 0) return "train.batch_size must be > 0";
  // Token sequences and the language model belong together: anything else would fail later
  // with a message about shapes.
  const std::string& dn = c.data.name;
  const bool tokens = dn == "text" || dn == "copy" || dn == "reverse" || dn == "sort" || dn == "add";
  if (tokens && c.model.name != "gpt")
    return "model.name: data.name=" + dn + " gives byte sequences, which only model.name=gpt reads (got " +
           c.model.name + ")";
  if (!tokens && c.model.name == "gpt")
    return "data.name: model.name=gpt reads byte sequences: data.name=text (a text file) or a "
           "sequence task (copy, reverse, sort, add), not " + dn;
  if (t.accumulation <= 0) return "train.accumulation must be > 0";
  if (!(t.clipNorm >= 0) || !std::isfinite(t.clipNorm)) return "train.clip_norm must be a finite number >= 0";
  if (!std::isfinite(t.lossWeight) || !(t.lossWeight > 0)) return "train.loss_weight must be a finite number > 0";
  if (t.histogramEvery < 0) return "train.histogram_every must be >= 0";
  if (c.dist.ranks < 1 || c.dist.ranks > 1024) return "dist.ranks must be from 1 to 1024";
  if (c.dist.injectRank < -1) return "dist.inject_rank must be -1 (every rank) or a rank >= 0";
  if (!(c.dist.bucketMb > 0) || !std::isfinite(c.dist.bucketMb)) return "dist.bucket_mb must be a finite number > 0";
  if (!(c.dist.timeoutS > 0) || !std::isfinite(c.dist.timeoutS)) return "dist.timeout_s must be a finite number > 0";
  if (t.evalEvery < 0) return "train.eval_every must be >= 0";
  // OpenMP crashed (SIGSEGV) creating 100000 threads; more threads than this helps no CPU.
  if (t.threads < 0 || t.threads > kMaxTrainThreads)
    return "train.threads must be from 0 (all cores) to " + std::to_string(kMaxTrainThreads) + ", got " +
           std::to_string(t.threads);
  for (auto s : t.injectNonFinite)
    if (s <= 0) return "train.inject_nonfinite steps are 1-based and must be > 0";
  if (auto e = validate(c.scaler)) return e;
  try {
    validateFp8Config(c.fp8);
  } catch (const ConfigError& e) {
    return e.what();
  }
  if (auto e = validateOptimizer(c.optimizer)) return e;
  if (auto e = validateSchedule(c.schedule)) return e;
  const auto& m = c.model;
  if (m.width <= 0) return "model.width must be > 0";
  if (m.layers <= 0) return "model.layers must be > 0";
  for (auto h : m.hidden)
    if (h <= 0) return "model.hidden sizes must be > 0";
  if (!(m.dropout >= 0 && m.dropout < 1)) return "model.dropout must be in [0, 1)";
  if (m.baseWidth < 0 || m.baseWidth > 65536) return "model.base_width must be from 0 (the layout's) to 65536";
  const auto& d = c.data;
  if (d.subset < 0) return "data.subset must be >= 0";
  if (d.testSubset < 0) return "data.test_subset must be >= 0";
  if (d.samples < 0) return "data.samples must be >= 0";
  if (!(d.testFraction >= 0 && d.testFraction < 1)) return "data.test_fraction must be in [0, 1)";
  if (!(d.noise >= 0) || !std::isfinite(d.noise)) return "data.noise must be >= 0";
  if (d.classes < 0) return "data.classes must be >= 0";
  if (d.batches <= 0) return "data.batches must be > 0";
  if (d.imageSize < 1 || d.imageSize > 1024)
    return "data.image_size must be from 1 to 1024, got " + std::to_string(d.imageSize);
  if (d.channels != 1 && d.channels != 3) return "data.channels must be 3 (RGB) or 1 (grayscale), got " + std::to_string(d.channels);
  if (d.padTo < 0 || d.padTo > 4096) return "data.pad_to must be from 0 (off) to 4096, got " + std::to_string(d.padTo);
  if (d.augmentCrop < 0 || d.augmentCrop > 1024)
    return "data.augment_crop must be from 0 (off) to 1024, got " + std::to_string(d.augmentCrop);
  if (c.checkpoint.every < 0) return "checkpoint.every must be >= 0";
  return std::nullopt;
}

}  // namespace amp
