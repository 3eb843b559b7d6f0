#include "ui/experiment_layout.h"

#include <QObject>
#include <map>

namespace amp::ui::experiment_layout {


QString labelFor(const std::string& key) {
  static const std::map<std::string, QString> labels = {
      {"name", "Run name"}, {"seed", "Seed"}, {"amp.mode", "Precision"}, {"backend", "Backend"},
      {"tf32", "TF32 GEMMs (GPU)"},
      {"reduced_precision_reduction", "16-bit split-K sums (GPU)"},
      {"scaler.kind", "Scaler"}, {"scaler.enabled", "Enabled"}, {"scaler.init_scale", "Initial scale"},
      {"scaler.growth_factor", "Growth factor"}, {"scaler.backoff_factor", "Backoff factor"},
      {"scaler.growth_interval", "Growth interval"}, {"scaler.min_scale", "Min scale"},
      {"scaler.max_scale", "Max scale"}, {"scaler.hysteresis", "Hysteresis"},
      {"optimizer.name", "Optimizer"}, {"optimizer.lr", "Learning rate"},
      {"optimizer.momentum", "Momentum"}, {"optimizer.nesterov", "Nesterov"},
      {"optimizer.weight_decay", "Weight decay"}, {"optimizer.beta1", "β1"}, {"optimizer.beta2", "β2"},
      {"optimizer.eps", "ε"}, {"schedule.name", "Schedule"}, {"schedule.step_size", "Step size"},
      {"schedule.gamma", "γ (decay)"}, {"schedule.warmup_steps", "Warm-up steps"},
      {"schedule.min_lr", "Final lr"}, {"model.name", "Model"}, {"model.width", "Width"},
      {"model.layers", "Layers"}, {"model.hidden", "Hidden sizes"}, {"model.activation", "Activation"},
      {"model.dropout", "Dropout"}, {"model.batchnorm", "BatchNorm"}, {"model.cnn", "Blocks"},
      {"model.depth", "Depth"}, {"model.base_width", "Base width"}, {"model.stem", "Stem"},
      {"data.name", "Data set"}, {"data.path", "Path"}, {"data.subset", "Subset size"}, {"data.test_subset", "Test subset"},
      {"data.normalize", "Normalize"}, {"data.test_fraction", "Test share"},
      {"data.samples", "Samples"}, {"data.noise", "Noise"}, {"data.classes", "Classes"},
      {"data.batches", "Batches"}, {"data.label_column", "Label column"}, {"data.header", "Header row"},
      {"data.test_path", "Test folder"}, {"data.image_size", "Image size"},
      {"data.channels", "Channels"}, {"data.pad_to", "Pad to"}, {"data.augment_crop", "Random crop pad"},
      {"data.augment_flip", "Random flips"}, {"data.cache", "Decoded cache"},
      {"train.steps", "Steps"}, {"train.epochs", "Epochs"}, {"train.batch_size", "Batch size"},
      {"train.accumulation", "Accumulation"}, {"train.clip_norm", "Clip grad norm"},
      {"train.loss", "Loss"}, {"train.loss_weight", "Loss weight"},
      {"train.histogram_every", "Histograms every"}, {"train.eval_every", "Evaluate every"},
      {"train.on_divergence", "On divergence"}, {"train.inject_nonfinite", "Inject inf at"},
      {"train.inject_param", "Inject into"}, {"train.post_unscale_check", "Post-unscale check"},
      {"train.threads", "CPU threads"}, {"checkpoint.every", "Checkpoint every"},
      {"checkpoint.at_end", "Checkpoint at end"}, {"dist.ranks", "Ranks"},
      {"dist.inject_rank", "Inject on rank"}, {"dist.bucket_mb", "Bucket (MiB)"},
      {"dist.timeout_s", "Collective timeout (s)"}, {"dist.kill_rank", "Kill rank"},
      {"dist.kill_step", "Kill at step"}};
  auto it = labels.find(key);
  return it != labels.end() ? it->second : QString::fromStdString(key);
}

const Groups kModelTab = {
    {"Model", {"model.name", "model.width", "model.layers", "model.hidden", "model.cnn",
               "model.depth", "model.base_width", "model.stem", "model.activation", "model.dropout",
               "model.batchnorm"}},
    {"Data", {"data.name", "data.path", "data.test_path", "data.image_size", "data.channels",
              "data.pad_to", "data.normalize", "data.augment_crop", "data.augment_flip",
              "data.subset", "data.test_subset", "data.samples", "data.noise", "data.classes", "data.batches",
              "data.test_fraction", "data.label_column", "data.header", "data.cache"}}};
const Groups kPrecisionTab = {
    {"Precision", {"amp.mode", kModeNote, "backend", "tf32", "reduced_precision_reduction", kBackendNote}},
    {"Loss scaler", {"scaler.enabled", "scaler.kind", "scaler.init_scale", "scaler.growth_factor",
                     "scaler.backoff_factor", "scaler.growth_interval", "scaler.min_scale",
                     "scaler.max_scale", "scaler.hysteresis", kScalerNote, kScalerDefaults}}};
// Optimizer and schedule share the Training tab: four tabs fit a narrow dock without scrolling.
const Groups kTrainingTab = {
    {"Optimizer", {"optimizer.name", "optimizer.lr", "optimizer.momentum", "optimizer.nesterov",
                   "optimizer.weight_decay", "optimizer.beta1", "optimizer.beta2", "optimizer.eps"}},
    {"Learning-rate schedule", {"schedule.name", "schedule.step_size", "schedule.gamma",
                                "schedule.warmup_steps", "schedule.min_lr"}},
    {"Steps and batches", {"name", "seed", "train.steps", "train.epochs", "train.batch_size",
                  "train.accumulation", "train.clip_norm", "train.loss", "train.loss_weight"}},
    {"Telemetry and faults", {"train.histogram_every", "train.eval_every", "train.on_divergence",
                              "train.inject_nonfinite", "train.inject_param",
                              "train.post_unscale_check", "train.threads"}},
    {"Checkpoints", {"checkpoint.every", "checkpoint.at_end"}},
    // Several ranks start through Open MPI's mpirun and are followed through their run folder.
    {"Data parallel (Open MPI)", {"dist.ranks", "dist.inject_rank", "dist.bucket_mb", "dist.timeout_s",
                                  "dist.kill_rank", "dist.kill_step"}}};

namespace {
bool isOneOf(const std::string& v, std::initializer_list<const char*> set) {
  for (const char* s : set)
    if (v == s) return true;
  return false;
}

}  // namespace

// Whether a key matters for `c` (irrelevant rows are hidden, and their parse errors ignored).
bool relevant(const std::string& key, const RunConfig& c) {
  const auto& m = c.model.name;
  const auto& d = c.data.name;
  const bool toy = isOneOf(d, {"spirals", "circles", "blobs"});
  const auto kind = c.scaler.kind;
  const bool scaling = kind != ScalerKind::None;
  const bool adaptive = scaling && kind != ScalerKind::Static;
  if (key == "model.width" || key == "model.layers") return m == "recipe_mlp";
  if (key == "model.hidden" || key == "model.dropout") return m == "mlp";
  if (key == "model.cnn") return m == "cnn";
  if (key == "model.depth" || key == "model.base_width" || key == "model.stem") return m == "resnet";
  // A ResNet always has batch norm and ReLU: its blocks are defined so.
  if (key == "model.batchnorm") return m != "recipe_mlp" && m != "resnet";
  if (key == "model.activation") return m != "resnet";
  const bool images = isOneOf(d, {"fmnist", "cifar10", "images"});
  if (key == "data.path") return isOneOf(d, {"fmnist", "csv", "cifar10", "images"});
  if (key == "data.subset" || key == "data.test_subset") return d != "synthetic";
  if (key == "data.normalize" || key == "data.pad_to" || key == "data.augment_crop" ||
      key == "data.augment_flip")
    return images;
  if (key == "data.test_path" || key == "data.image_size" || key == "data.channels" ||
      key == "data.cache")
    return d == "images";
  if (key == "data.samples" || key == "data.noise") return toy;
  if (key == "data.classes") return d == "blobs";
  if (key.rfind("dist.", 0) == 0 && key != "dist.ranks") return c.dist.ranks > 1;
  if (key == "data.batches") return d == "synthetic";
  if (key == "data.test_fraction") return toy || d == "csv" || (d == "images" && c.data.testPath.empty());
  if (key == "data.label_column" || key == "data.header") return d == "csv";
  if (key == "scaler.init_scale") return scaling;
  if (key == "scaler.growth_factor" || key == "scaler.backoff_factor" || key == "scaler.growth_interval")
    return adaptive;
  if (key == "scaler.min_scale") return kind == ScalerKind::ApexDynamic || kind == ScalerKind::Hysteresis;
  if (key == "scaler.max_scale") return kind == ScalerKind::ApexDynamic;
  if (key == "scaler.hysteresis") return kind == ScalerKind::Hysteresis;
  if (key == "optimizer.momentum" || key == "optimizer.nesterov") return c.optimizer.name == "sgd";
  if (key.rfind("optimizer.beta", 0) == 0 || key == "optimizer.eps") return c.optimizer.name != "sgd";
  if (key == "schedule.step_size" || key == "schedule.gamma") return c.schedule.name == "step";
  if (key == "schedule.warmup_steps" || key == "schedule.min_lr") return c.schedule.name == "cosine";
  if (key == "train.epochs") return c.train.steps == 0;
  return true;
}

QString modeExplanation(PrecisionMode m) {
  switch (m) {
    case PrecisionMode::Fp32:
      return QObject::tr("Everything in fp32: the baseline. No autocast and no loss scaling.");
    case PrecisionMode::AmpFp16:
      return QObject::tr("AMP fp16: autocast runs matmuls and convolutions in fp16; the optimizer "
                         "updates fp32 master weights; a loss scaler keeps small gradients above "
                         "fp16's underflow limit (2⁻²⁴ ≈ 6e-8).");
    case PrecisionMode::Fp8:
      return QObject::tr("fp8: bf16 AMP, with the Linear layers' GEMMs on fp8 or 4-bit operands "
                         "scaled per tensor or per block (fp8.recipe); fp32 master weights.");
    case PrecisionMode::AmpBf16:
      return QObject::tr("AMP bf16: as AMP fp16 but in bf16, which has fp32's exponent range: "
                         "gradients do not underflow, so PyTorch uses no scaler. 3 fewer mantissa "
                         "bits than fp16. fp32 master weights.");
    case PrecisionMode::PureFp16:
      return QObject::tr("Pure fp16: weights, gradients, activations and the update all in fp16 — "
                         "no fp32 master weights, so an update smaller than half an fp16 step of "
                         "its weight is lost (Apex O3-like).");
  }
  return {};
}

}  // namespace amp::ui::experiment_layout
