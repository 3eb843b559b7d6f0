#include "engine/config/presets.h"

#include "engine/config/config_schema.h"

namespace amp {

void appendFp8Presets(std::vector<Preset>& v);  // presets_fp8.cpp: the fp8 lessons (issue 39)

namespace {

const Overrides kRecipe = {
    {"model.name", "recipe_mlp"}, {"model.width", "1024"}, {"model.layers", "3"},
    {"data.name", "synthetic"},   {"data.batches", "50"},  {"train.batch_size", "256"},
    {"optimizer.name", "sgd"},    {"optimizer.lr", "0.001"}, {"train.steps", "150"},
    {"train.histogram_every", "25"}};

// Gradients pushed below fp16's range by a small loss weight; Adam keeps the fp32 run
// learning at normal speed whatever the gradients' magnitude, so only underflow can stall it.
const Overrides kUnderflow = {
    {"model.name", "mlp"},          {"model.hidden", "64,64"},       {"model.activation", "tanh"},
    {"data.name", "spirals"},       {"data.samples", "2000"},        {"data.noise", "0.05"},
    {"train.batch_size", "100"},    {"train.steps", "600"},          {"optimizer.name", "adam"},
    {"optimizer.lr", "0.01"},       {"train.loss_weight", "0.000001"}, {"train.histogram_every", "20"},
    {"train.eval_every", "50"}};

// The overflow lesson's run (also the two-workers lesson's): the recipe at width 256 in fp16, with
// non-finite gradients injected at steps 30, 31 and 90 and growth after 40 clean steps.
Overrides overflowSettings() {
  auto o = kRecipe;
  o.insert(o.end(), {{"amp.mode", "fp16"}, {"model.width", "256"}, {"train.steps", "200"},
                     {"scaler.growth_interval", "40"}, {"train.inject_nonfinite", "30,31,90"}});
  return o;
}

std::vector<Preset> build() {
  std::vector<Preset> v;
  v.push_back({"recipe", "The PyTorch AMP recipe",
               "The MLP from PyTorch's AMP recipe (3 Linear layers of width 1024, batch 256, SGD) "
               "on Gaussian data. Run it in fp32, fp16 and bf16 to compare step time and memory: "
               "activations and weights in 16 bits halve their bytes, and bf16 GEMMs run natively "
               "on CPUs with AVX512-BF16 or AMX, while fp16 is emulated exactly on the CPU.",
               // 100 steps (not 150): the losses agree and the step times settle well before, and
               // the three runs end within a minute on 2 busy CPU cores (issue 38).
               [] { auto o = kRecipe; o.insert(o.end(), {{"amp.mode", "fp16"}, {"train.steps", "100"}}); return o; }(),
               {{"fp32", {{"amp.mode", "fp32"}}},
                {"fp16", {{"amp.mode", "fp16"}}},
                {"bf16", {{"amp.mode", "bf16"}}}},
               false, {}, "activation|0", "fp16"});
  // The recipe exactly as published (width 4096, batch 512, 50 batches x 3 epochs), where tensor
  // cores make mixed precision pay most.
  {
    Preset tc{"tensor-cores", "Tensor cores: the recipe at full size",
              "PyTorch's AMP recipe at its published size (3 Linear layers of width 4096, batch "
              "512, 50 batches x 3 epochs, SGD) in fp32, AMP fp16 and AMP bf16 side by side on "
              "the GPU. The AMP runs' GEMMs run in 16 bits on tensor cores, several times "
              "fp32's rate (TF32 is off), so their steps are about 2-3x faster; the activations "
              "kept for backward are stored in 16 bits, so peak device memory falls to about "
              "0.6x of fp32's, while fp32 master weights and gradients stay. The runs table "
              "shows both ratios against the fp32 run.",
              [] {
                auto o = kRecipe;
                o.insert(o.end(), {{"model.width", "4096"}, {"train.batch_size", "512"},
                                   {"backend", "cuda"}, {"train.histogram_every", "50"}});
                return o;
              }(),
              {{"fp32", {{"amp.mode", "fp32"}}},
               {"fp16", {{"amp.mode", "fp16"}}},
               {"bf16", {{"amp.mode", "bf16"}}}}};
    tc.needsGpu = true;
    tc.focus = "activation|0";
    tc.focusVariant = "fp16";
    tc.cpuSized = {{"model.width", "1024"}, {"train.batch_size", "256"}, {"backend", "cpu"},
                   {"train.histogram_every", "25"}, {"train.steps", "100"}};  // the recipe lesson's length
    v.push_back(std::move(tc));
  }
  v.push_back({"underflow", "Underflow without loss scaling",
               "The loss is multiplied by 1e-6 (think of a small auxiliary-loss coefficient), so its gradients fall below fp16's smallest "
               "subnormal (2^-24 = 6e-8) and round to zero: without loss scaling the fp16 run's "
               "weights stop changing, while fp32 and fp16 with dynamic loss scaling keep "
               "learning. The loss chart shows it from the first steps (the unscaled run's loss "
               "stays flat while the others fall); the gradient histograms show why: the unscaled "
               "gradients sit left of the fp16 range, the scaled ones inside it.",
               kUnderflow,
               {{"fp32", {{"amp.mode", "fp32"}}},
                {"fp16_noscale", {{"amp.mode", "fp16"}, {"scaler.kind", "none"}}},
                {"fp16_dynamic", {{"amp.mode", "fp16"}, {"scaler.kind", "dynamic"}}}},
               // Opens on the loss: the histogram makes the point too but stays the same for the
               // whole run, where the curves part within seconds (issue 42 item 4).
               false, {}, "weight_grad|0.weight", "fp16_noscale", /*demoPace=*/30, "loss"});
  v.push_back({"overflow", "Overflow and backoff",
               "Non-finite gradients are injected at steps 30, 31 and 90. Each time the dynamic "
               "scaler skips the optimizer step and halves the scale; after growth_interval (40) "
               "clean steps it doubles it again. This is how GradScaler finds the largest safe "
               "scale on its own.",
               overflowSettings(),
               {}, false, {}, "weight_grad|4.weight", "", /*demoPace=*/50, "scale"});
  // Data-parallel ranks through Open MPI: the overflow lesson with the overflow on one rank only.
  v.push_back({"two-workers", "Two workers, one decision",
               "Two ranks train one model data-parallel (each on half of every batch, as PyTorch's "
               "DDP does); non-finite gradients are injected on rank 1 alone, at steps 30, 31 and 90. "
               "The scaled gradients are averaged over the ranks before the scaler looks at them, "
               "so the inf reaches rank 0 too: both ranks skip the same steps and halve and regrow "
               "the scale together, exactly as the single process does. A rank that decided alone "
               "would step while the other skipped, and the replicas would drift apart.",
               overflowSettings(),
               // The 1-rank run has its overflows on its one rank, whatever the panel's
               // "Inject on rank" says (a rank 1 it does not have would inject nothing).
               {{"1_rank", {{"dist.ranks", "1"}, {"dist.inject_rank", "-1"}}},
                {"2_ranks", {{"dist.ranks", "2"}, {"dist.inject_rank", "1"}}}},
               false, {}, "weight_grad|4.weight", "2_ranks", /*demoPace=*/0, "scale"});
  v.push_back({"bf16-no-scaler", "bf16 needs no loss scaler",
               "bf16 has fp32's 8 exponent bits: the same tiny gradients that vanish in fp16 "
               "survive in bf16 without any scaling (with 3 fewer mantissa bits than fp16). The "
               "histogram opens on the bf16 run: its gradients sit inside bf16's range (the band) "
               "and left of fp16's (the strip along the top); select the fp16 run to see them "
               "flushed to zero.",
               kUnderflow,
               {{"fp16_noscale", {{"amp.mode", "fp16"}, {"scaler.kind", "none"}}},
                {"bf16_noscale", {{"amp.mode", "bf16"}, {"scaler.enabled", "false"}}}},
               false, {}, "weight_grad|0.weight", "bf16_noscale", /*demoPace=*/30, "histogram"});
  // A small data set the MLP can fit, and an lr where AMP's updates (kept in fp32 masters) move
  // the loss while most of pure fp16's round away: the loss curves part, not only the meter.
  v.push_back({"pure-fp16", "Pure fp16 loses updates",
               "Without fp32 master weights, an update smaller than half the spacing of fp16 "
               "numbers around a weight is rounded away. Here SGD at lr 0.01 fits one fixed "
               "batch: in pure fp16 about nine in ten updates are lost (see the lost-update "
               "meter) and its loss falls about a third as fast as with AMP, which keeps fp32 "
               "masters and applies every update. The event log ends with both runs' lost "
               "updates and losses, measured.",
               [] {
                 auto o = kRecipe;
                 // One batch of 64 and width 128: the loss can only fall by many small steps,
                 // so the curves part (measured: 1.004 -> 0.954 with AMP, -> 0.987 pure fp16).
                 o.insert(o.end(), {{"model.width", "128"}, {"train.batch_size", "64"},
                                    {"data.batches", "1"}, {"optimizer.lr", "0.01"},
                                    {"train.steps", "1000"}});
                 return o;
               }(),
               {{"pure_fp16", {{"amp.mode", "pure_fp16"}}}, {"amp_fp16", {{"amp.mode", "fp16"}}}},
               false, {}, "weight_grad|2.weight", "pure_fp16", /*demoPace=*/200, "loss"});
  v.push_back({"fmnist-mlp", "Fashion-MNIST MLP",
               "784-256-256-10 with ReLU, Adam 1e-3, batch 128, 300 steps (two thirds of an "
               "epoch): the recipe of the PyTorch reference script, which trains 5 epochs "
               "(train.steps=0, train.epochs=5); compare fp32, fp16 and bf16 accuracy and speed.",
               {{"data.name", "fmnist"}, {"model.name", "mlp"}, {"model.hidden", "256,256"},
                {"optimizer.name", "adam"}, {"optimizer.lr", "0.001"}, {"train.batch_size", "128"},
                // 300 steps: the three precisions' accuracies already agree (5 epochs took
                // minutes; a lesson must conclude within one on 2 CPU cores, issue 38).
                {"train.steps", "300"}, {"train.epochs", "5"}, {"train.histogram_every", "100"},
                {"amp.mode", "fp16"}},
               {{"fp32", {{"amp.mode", "fp32"}}},
                {"fp16", {{"amp.mode", "fp16"}}},
                {"bf16", {{"amp.mode", "bf16"}}}},
               false, {}, "weight_grad|0.weight", "fp16"});
  v.push_back({"fmnist-cnn", "Fashion-MNIST CNN",
               "Two 3x3 conv blocks (32 and 64 channels, ReLU, 2x2 max-pool), fc 128, fc 10; "
               "Adam 1e-3, batch 128, 80 steps (3 epochs: train.steps=0), in fp32, fp16 and bf16: compare accuracy, speed "
               "and memory. Watch the fp16 run's loss scale: where a gradient overflows fp16 at "
               "the current scale (around steps 17 and 27 with the default seed), the step is "
               "skipped and the scale halved; the conclusion lists the skipped steps.",
               {{"data.name", "fmnist"}, {"model.name", "cnn"},
                {"model.cnn", "conv:32,pool,conv:64,pool,fc:128"}, {"optimizer.name", "adam"},
                // 80 steps: the skipped steps come early and the accuracies agree (3 epochs took
                // 7 minutes on 2 CPU cores; a lesson must conclude within one, issue 38).
                {"optimizer.lr", "0.001"}, {"train.batch_size", "128"}, {"train.steps", "80"},
                {"train.epochs", "3"}, {"train.histogram_every", "100"}, {"amp.mode", "fp16"}},
               {{"fp32", {{"amp.mode", "fp32"}}},
                {"fp16", {{"amp.mode", "fp16"}}},
                {"bf16", {{"amp.mode", "bf16"}}}},
               // Its text says "watch the fp16 run's loss scale": it opens there (it opened on
               // the accuracy); the result then shows the accuracies.
               false, {}, "weight_grad|0.weight", "fp16", 0, "scale"});
  // The seeds' experiments (ResNet-50 on CIFAR-10, ResNet-18 on photos) at a size a CPU trains
  // within a minute (issue 38): ResNet-20 on Fashion-MNIST padded to 32x32 with the CIFAR
  // ResNets' augmentation (crop 32 after padding 4, flips) and a cosine schedule, at half width
  // (8/16/32 channels), batch 64, Adam 2e-3, one epoch of 6,400 images, tested on 2,000. The
  // PyTorch peer's full recipe (shared/peers/pytorch_resnet.py: width 16, batch 128, SGD momentum
  // 0.9, lr 0.1, weight decay 5e-4, 2 epochs of all 60,000, 938 steps a run) took over 15
  // minutes on 2 cores, and SGD cut short leaves the precisions' accuracies far apart (40 steps
  // at full width: 62.9 / 64.1 / 54.2%; 100 at half width and lr 0.05, seed 2: 71.2 / 69.3 /
  // 66.0%), where Adam's agree (seeds 1 and 2: 70.5 / 71.9 / 70.2% and 66.0 / 66.6 / 68.0%). The
  // memory ratios (activations 0.50x, weights file 0.5x, checkpoint 1.00x) are the full size's.
  // A checkpoint at the end, so the table has its size beside the 16-bit weights file's.
  v.push_back({"resnet", "ResNet: what AMP buys",
               "ResNet-20 (3 stages of residual blocks, batch norm, global average pooling; here "
               "at half width, 8/16/32 channels) on Fashion-MNIST padded to 32x32, with the CIFAR "
               "ResNets' random crops and flips and a cosine schedule, trained with Adam for one "
               "epoch of 6,400 images so that it ends within a minute (the seeds' recipe: "
               "model.base_width=16 train.batch_size=128 optimizer.name=sgd optimizer.lr=0.1 "
               "optimizer.momentum=0.9 optimizer.weight_decay=0.0005 train.epochs=2 "
               "data.subset=0). fp32, AMP fp16 and AMP bf16 with the same seed reach the same "
               "test accuracy; compare "
               "the time per epoch, the activations AMP keeps in 16 bits (about half of fp32's), "
               "the checkpoint (fp32 master weights and Adam's moments: as large as fp32's) and the "
               "weights file a 16-bit run exports (half). Point data.name=cifar10 or images and "
               "data.path at your own images to run the same table on them.",
               {{"model.name", "resnet"}, {"model.depth", "20"}, {"data.name", "fmnist"},
                {"data.pad_to", "32"}, {"data.normalize", "standard"}, {"data.augment_crop", "4"},
                {"data.augment_flip", "true"}, {"optimizer.name", "adam"}, {"optimizer.lr", "0.002"},
                {"model.base_width", "8"}, {"data.subset", "6400"}, {"data.test_subset", "2000"},
                {"schedule.name", "cosine"}, {"train.batch_size", "64"}, {"train.steps", "0"},
                {"train.epochs", "1"}, {"train.histogram_every", "40"}, {"checkpoint.at_end", "true"},
                {"amp.mode", "fp16"}},
               {{"fp32", {{"amp.mode", "fp32"}}},
                {"fp16", {{"amp.mode", "fp16"}}},
                {"bf16", {{"amp.mode", "bf16"}}}},
               false, {}, "weight_grad|layers.0.c1.weight", "fp16"});
  // The transformer (gpt_builder.h) on Debian's fortunes, as ../shared/peers/pytorch_gpt.py
  // trains it: AdamW (betas 0.9, 0.99, no weight decay), lr 1e-3, batch 32 windows of 128 bytes.
  // About 0.4-0.5 s a step on two CPU cores.
  const Overrides gpt = {{"model.name", "gpt"}, {"model.layers", "4"}, {"model.heads", "4"},
                         {"model.embd", "128"}, {"model.block", "128"}, {"data.name", "text"},
                         {"optimizer.name", "adamw"}, {"optimizer.lr", "0.001"},
                         {"optimizer.beta2", "0.99"}, {"optimizer.weight_decay", "0"},
                         {"train.batch_size", "32"}, {"train.steps", "300"},
                         {"train.eval_every", "50"}, {"train.histogram_every", "50"}};
  auto with = [](Overrides base, const Overrides& more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  v.push_back({"gpt", "A transformer language model",
               "A small GPT (4 pre-LayerNorm blocks of causal self-attention and a 4x MLP, 128 "
               "wide, byte-level, its output layer tied to the token embedding) learns to write "
               "fortune cookies from Debian's fortunes file, with AMP fp16 and dynamic loss "
               "scaling. Under autocast the Linear layers and the attention matmuls run in fp16, "
               "while layer_norm, softmax and cross_entropy stay in fp32: the per-op trace shows "
               "every one. Validation loss in bits per byte falls from 8 (a uniform guess) as it "
               "learns; at the end it writes a sample. Set data.path to any text file.",
               // 40 steps (60 took 60.3 s to the conclusion on 2 quiet CPU cores and 122 s beside a
               // busy process, issue 38): the validation loss is far below a uniform guess by
               // then; 300 (train.steps=300) write better fortunes.
               with(gpt, {{"amp.mode", "fp16"}, {"train.steps", "40"}, {"train.eval_every", "20"},
                          {"train.histogram_every", "20"}}),
               {}, false, {},
               "weight_grad|transformer.h.0.attn.c_attn.weight", "", 0, "loss"});
  // Figure 1 of the mixed-precision paper on a transformer: gradients scaled down by a small loss
  // weight (1e-4) underflow fp16 without loss scaling (the loss stays at ln 256, a uniform
  // guess), while dynamic scaling recovers them and trains as fp32 and bf16 do.
  v.push_back({"gpt-scaling", "Loss scaling saves the language model",
               "The mixed-precision paper's first figure, on our transformer: the same run in "
               "fp32, in fp16 without loss scaling, in fp16 with dynamic loss scaling and in bf16. "
               "A small loss weight (1e-4, as an auxiliary loss would have) pushes the gradients "
               "below fp16's range: unscaled, most of them round to zero (see the histogram) and "
               "the model never learns; the scaler multiplies them back into range and the run "
               "follows fp32's. bf16 has fp32's exponent range and needs no scaler.",
               // Four runs within a minute on 2 CPU cores (issue 38): batch 16 and 16 steps (20
               // took 44 s quiet and 95 s beside a busy process; 10 steps already confirm). The
               // unscaled run's loss stays at ln 256 from the first step, the others fall together.
               with(gpt, {{"train.steps", "16"}, {"train.batch_size", "16"}, {"train.eval_every", "8"},
                          {"train.histogram_every", "8"}, {"train.loss_weight", "0.0001"}}),
               {{"fp32", {{"amp.mode", "fp32"}}},
                {"fp16_noscale", {{"amp.mode", "fp16"}, {"scaler.kind", "none"}}},
                {"fp16_dynamic", {{"amp.mode", "fp16"}, {"scaler.kind", "dynamic"}}},
                {"bf16", {{"amp.mode", "bf16"}}}},
               false, {}, "weight_grad|transformer.h.0.attn.c_attn.weight", "fp16_noscale", 0,
               "loss"});
  // Autocast's fp32 list, tested: softmax, then layer_norm too, moved to the 16-bit list. It was
  // "Why softmax and layer_norm stay in fp32", which its runs never showed (three curves on one
  // line, issue 38): our kernels, like PyTorch's, compute softmax and layer_norm in fp32 inside
  // and round only their outputs, which feed matmuls that round them to fp16 anyway (the three
  // runs' first losses agree to 6 digits). What a 16-bit input costs layer_norm (rows past 65504,
  // or with a large common offset) needs activations a model this size does not have, and
  // attention logits past fp16's range overflow in the scores matmul, on the 16-bit list either
  // way. So the lesson claims what it shows: the loss stays; softmax's fp32 probabilities, kept
  // for its backward, cost a quarter of the activations' peak; layer_norm's fp32 rows cost none.
  v.push_back({"gpt-fp32-ops", "What autocast's fp32 list costs a small GPT",
               "PyTorch's autocast runs the matmuls in fp16 but keeps softmax and layer_norm in "
               "fp32. Here the same fp16 run is repeated with softmax moved to the 16-bit list, "
               "then layer_norm too (the autocast editor can move any op). Their kernels compute "
               "in fp32 either way, as PyTorch's do, and the matmul after each rounds its output "
               "to fp16 anyway: the loss stays where it was. What the list costs is memory where "
               "an fp32 output is kept: softmax's probabilities, which its backward needs, beside "
               "the fp16 copy the next matmul saves (the memory chart); layer_norm's fp32 rows are "
               "freed once that copy is made. Large models keep the list for inputs this one never "
               "has: layer_norm rows past fp16's range or with a large common offset. The trace "
               "shows which op ran in which dtype.",
               // Three runs within a minute on 2 CPU cores beside builds: batch 16 and 10 steps
               // (20 took 95 s through the CLI at a load average of 5-8). The validation loss is
               // 3.65 by step 10 (ln 256 = 5.55), and the memory differs from the first step.
               with(gpt, {{"train.steps", "10"}, {"train.batch_size", "16"}, {"train.eval_every", "5"},
                          {"train.histogram_every", "10"}, {"amp.mode", "fp16"}}),
               {{"fp32_lists", {}},
                {"softmax_fp16", {{"autocast.softmax", "lower_precision"}}},
                {"softmax_layernorm_fp16",
                 {{"autocast.softmax", "lower_precision"}, {"autocast.layer_norm", "lower_precision"}}}},
               false, {}, "weight_grad|transformer.h.0.attn.c_attn.weight", "", 0, "loss"});
  v.push_back({"spirals", "Two spirals",
               "A small MLP learns two interleaved spirals: quick to train, good for trying "
               "every setting live.",
               // data.samples written out: 0 means "the default 1000", and the panel showed 0.
               // Noise 0.05 (the default 0.1 blurred the arms into two blobs on the Data chart,
               // issue 42 item 7), as the underflow lessons' spirals have it.
               {{"data.name", "spirals"}, {"data.samples", "1000"}, {"data.noise", "0.05"}, {"model.name", "mlp"},
                {"model.hidden", "64,64"}, {"model.activation", "tanh"}, {"optimizer.name", "adam"},
                {"optimizer.lr", "0.01"}, {"train.batch_size", "100"}, {"train.steps", "1000"},
                {"train.eval_every", "50"}, {"train.histogram_every", "20"}, {"amp.mode", "fp16"}},
               {}, false, {}, "weight_grad|0.weight", "", /*demoPace=*/100});
  appendFp8Presets(v);
  return v;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = build();
  return all;
}

const Preset* findPreset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::string presetNames() {
  std::string s;
  for (const auto& p : presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

RunConfig presetConfig(const Preset& p, const PresetVariant* variant, bool cpuSized) {
  RunConfig c;
  for (const auto& [k, v] : p.settings) setConfigValue(c, k, v);
  if (cpuSized)
    for (const auto& [k, v] : p.cpuSized) setConfigValue(c, k, v);
  if (variant)
    for (const auto& [k, v] : variant->overrides) setConfigValue(c, k, v);
  c.name = p.name + (variant ? "/" + variant->label : "");
  return c;
}

}  // namespace amp
