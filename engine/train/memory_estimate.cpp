#include "engine/train/memory_estimate.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/data/dataset.h"
#include "engine/data/image_dataset.h"
#include "engine/nn/conv2d.h"
#include "engine/nn/linear.h"
#include "engine/nn/residual_block.h"
#include "engine/nn/token_embedding.h"
#include "engine/nn/transformer_block.h"
#include "engine/train/model_factory.h"

namespace amp {

namespace {

// Parameters of a layer from its sizes (the model is built but never initialised), and whether
// autocast computes it in 16 bits (its weight then also has a 16-bit cast).
struct LayerParams {
  std::int64_t count = 0;
  bool weighted = false;
};

LayerParams paramsOf(const Layer& l, const Shape& in);

std::int64_t convParams(const Conv2d& conv) {
  return conv.outChannels() * conv.inChannels() * conv.kernelSize() * conv.kernelSize() +
         (conv.hasBias() ? conv.outChannels() : 0);
}

// A residual block's parameters: its convolutions (weighted) and batch norms (gamma, beta).
LayerParams blockParams(const ResidualBlock& b) {
  LayerParams p{0, true};
  for (const Conv2d* conv : b.convolutions()) p.count += convParams(*conv);
  const std::int64_t norms = b.hasProjection() ? 3 : 2;
  p.count += norms * 2 * b.outChannels();
  return p;
}

LayerParams paramsOf(const Layer& l, const Shape& in) {
  if (const auto* block = dynamic_cast<const ResidualBlock*>(&l)) return blockParams(*block);
  if (const auto* block = dynamic_cast<const TransformerBlock*>(&l))
    return {TransformerBlock::parameterCount(block->width()), true};
  if (const auto* emb = dynamic_cast<const TokenEmbedding*>(&l)) return {emb->parameterCount(), false};
  if (l.kind() == "LayerNorm") return {2 * (in.empty() ? 1 : in.back()), false};
  if (const auto* lin = dynamic_cast<const Linear*>(&l); lin && lin->tied()) return {0, true};
  if (const auto* lin = dynamic_cast<const Linear*>(&l))
    return {lin->inFeatures() * lin->outFeatures() + (lin->hasBias() ? lin->outFeatures() : 0), true};
  if (const auto* conv = dynamic_cast<const Conv2d*>(&l)) return {convParams(*conv), true};
  if (l.kind() == "BatchNorm") return {2 * (in.empty() ? 1 : in[0]), false};  // gamma, beta
  return {};
}

std::int64_t bytesOf(DType d) { return std::int64_t(dtypeSize(d)); }

}  // namespace

std::string MemoryEstimate::summary() const {
  std::vector<std::pair<std::int64_t, std::string>> parts = {
      {weights + masterWeights, "parameters"}, {gradients, "gradients"},
      {optimizerState, optimizerStateName.empty() ? "optimizer state" : optimizerStateName},
      {activations, "activations"}, {workspace, "workspace"},
      {emulationScratch, "fp32 copies for emulated 16-bit math"},
      {convScratch, "convolution layout copies"}};
  std::stable_sort(parts.begin(), parts.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::string s = "≈ " + formatBytes(tracked()) + " (";
  bool first = true;
  for (const auto& [bytes, name] : parts) {
    if (bytes <= 0) continue;
    s += (first ? "" : ", ") + name + " " + formatBytes(bytes);
    first = false;
  }
  return s + ")";
}

MemoryEstimate estimateMemory(const RunConfig& c, const DataShapes& data) {
  MemoryEstimate e;
  const std::int64_t batch = c.train.batchSize;
  const bool autocast = c.usesAutocast();
  const bool pure = c.mode == PrecisionMode::PureFp16;
  const DType act = c.computeDtype();  // what weighted layers output, and the layers after them

  // Parameters and the forward pass's outputs, from the factory's own model (sizes only).
  const auto model = buildModel(c.model, data.sample, data.outputs);
  struct Output {
    std::string kind;
    std::int64_t numel;
    std::int64_t savedInside = 0;  // a residual block's own saved tensors, its output included
  };
  std::vector<Output> outputs;  // Flatten is a view: it adds no tensor
  std::int64_t weightedParams = 0, largestOutput = 0, perSampleActivationBytes = 0;
  std::int64_t largestEmulatedOp = 0;  // elements of one weighted op's operands and result
  // The largest convolution's blocked-layout copies, in elements for the whole batch: about
  // three times its input and output while both backward passes run (conv2dBackward), twice for
  // the first weighted layer, which needs no input gradient (measured on ResNets and the CNN).
  std::int64_t largestConv = 0;
  bool anyWeighted = false;
  Shape shape = data.sample;
  for (const auto& layer : model->layers()) {
    const LayerParams p = paramsOf(*layer, shape);
    e.parameterCount += p.count;
    const Shape in = shape;
    shape = layer->outputShape(shape);
    std::int64_t savedInside = 0;
    if (const auto* block = dynamic_cast<const ResidualBlock*>(layer.get())) {
      // conv1's output (batch norm saves it), ReLU's (conv2 saves it), conv2's (its batch norm
      // saves it), the projection's (its batch norm's), the block's output (the last ReLU's).
      // Each convolution is an emulated op of its own.
      const auto convs = block->convolutions();
      const Shape mid = convs[0]->outputShape(in);
      savedInside = 3 * shapeNumel(mid) + (block->hasProjection() ? shapeNumel(shape) : 0) +
                    shapeNumel(shape);
      for (const Conv2d* conv : convs) {
        const Shape cin = conv == convs[1] ? mid : in;
        largestEmulatedOp = std::max(largestEmulatedOp,
                                     3 * (batch * (shapeNumel(cin) + shapeNumel(mid)) +
                                          convParams(*conv)));
        largestConv = std::max(largestConv, 3 * batch * (shapeNumel(cin) + shapeNumel(mid)));
      }
      weightedParams += p.count;
    } else if (const auto* tb = dynamic_cast<const TransformerBlock*>(layer.get())) {
      // Per token, in bytes: in fp32 whatever the mode, the residual stream the two LayerNorms
      // save, the block's output and the softmax's probabilities (H x T); in the compute dtype,
      // the inputs c_attn, c_proj and c_fc save (3 C), q, k and v (3 C), the GELU's input and
      // output (8 C) and, under autocast, the probabilities' 16-bit copy for the second matmul.
      const std::int64_t T = in.empty() ? 1 : in.front(), C = tb->width(), H = tb->heads();
      const std::int64_t a = bytesOf(act);
      const std::int64_t bytes = T * (12 * C + 4 * H * T + a * (14 * C + (act == DType::F32 ? 0 : H * T)));
      savedInside = bytes / a;
      weightedParams += p.count;
      // The attention's batched GEMMs widen their 16-bit operands and results at once (scores:
      // q, k and the T x T matrices of every head); the MLP's GEMMs one operand each.
      largestEmulatedOp = std::max({largestEmulatedOp, batch * T * (C + 4 * C) + 4 * C * C,
                                    batch * (H * T * T + 2 * T * C)});
    } else if (p.weighted) {
      weightedParams += p.count;
      // oneDNN's convolutions add blocked-layout copies of about twice the operands again.
      const std::int64_t reorders = layer->kind() == "Conv2d" ? 3 : 1;
      largestEmulatedOp = std::max(
          largestEmulatedOp, reorders * (batch * (shapeNumel(in) + shapeNumel(shape)) + p.count));
      if (layer->kind() == "Conv2d")
        largestConv = std::max(largestConv,
                               (anyWeighted ? 3 : 2) * batch * (shapeNumel(in) + shapeNumel(shape)));
    }
    anyWeighted = anyWeighted || p.weighted;
    largestOutput = std::max(largestOutput, shapeNumel(shape));
    if (layer->kind() != "Flatten") outputs.push_back({layer->kind(), shapeNumel(shape), savedInside});
  }
  // Which outputs stay alive until backward: those the next layer saves as its input (weighted
  // layers, BatchNorm, activations other than ReLU, which backpropagates from its output) and
  // those an activation saves as its own output. A weighted layer's output followed by a ReLU
  // is freed after the ReLU; the logits after the loss (its fp32 probabilities stay).
  auto isActivation = [](const std::string& k) {
    return k == "ReLU" || k == "Tanh" || k == "Sigmoid" || k == "GELU";
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& next = i + 1 < outputs.size() ? outputs[i + 1].kind : std::string();
    const bool savedByNext = next == "Linear" || next == "Conv2d" || next == "BatchNorm" ||
                             next == "LayerNorm" ||
                             next == "ResidualBlock" || (isActivation(next) && next != "ReLU");
    const bool savedBySelf = isActivation(outputs[i].kind);
    if (outputs[i].kind == "ResidualBlock" || outputs[i].kind == "TransformerBlock")  // its output is among the tensors it saves
      perSampleActivationBytes += outputs[i].savedInside * bytesOf(act);
    else if (savedByNext || savedBySelf)
      perSampleActivationBytes += outputs[i].numel * bytesOf(act);
    if (outputs[i].kind == "Dropout") perSampleActivationBytes += outputs[i].numel;        // U8 mask
    if (outputs[i].kind == "MaxPool2d") perSampleActivationBytes += outputs[i].numel * 4;  // argmax
  }
  const std::int64_t inputNumel = shapeNumel(data.sample);

  const std::int64_t P = e.parameterCount;
  if (pure) {
    e.weights = 2 * P;
    e.gradients = 2 * P;
  } else if (autocast) {
    e.masterWeights = 4 * P;
    e.weights = bytesOf(act) * weightedParams;  // autocast's cached 16-bit weight casts
    e.gradients = 4 * P;
  } else {
    e.weights = 4 * P;
    e.gradients = 4 * P;
  }
  const std::string& opt = c.optimizer.name;
  if (opt == "adam" || opt == "adamw") {
    e.optimizerState = 8 * P;  // exp_avg and exp_avg_sq, fp32
    e.optimizerStateName = "Adam state";
  } else if (c.optimizer.momentum != 0) {
    e.optimizerState = 4 * P;
    e.optimizerStateName = "momentum";
  }

  // A batch's saved outputs, the input's 16-bit cast, the loss's fp32 probabilities, and during
  // backward a gradient of the largest layer output in flight.
  e.activations = batch * (perSampleActivationBytes + (autocast ? inputNumel * bytesOf(act) : 0) +
                           data.outputs * 4 + largestOutput * bytesOf(act));

  const std::int64_t inputBytes = pure ? 2 : 4;
  const std::int64_t targetBytes = data.classification ? 4 : 4 * data.outputs;
  e.workspace = batch * (inputNumel * inputBytes + targetBytes);
  const bool emulated = data.emulatedCompute && act != DType::F32;
  if (emulated) e.emulationScratch = 4 * largestEmulatedOp;
  // In the compute dtype; emulated, in fp32 and with fp32 staging copies beside them.
  e.convScratch = emulated ? largestConv * 20 / 3 : largestConv * bytesOf(act);
  const bool augmented = c.data.augmentCrop > 0 || c.data.augmentFlip;  // never on the device (trainer.cpp)
  const bool deviceCache = !augmented && (c.data.deviceCache == "on" ||
                                          (c.data.deviceCache == "auto" && c.backend.rfind("cuda", 0) == 0));
  if (deviceCache) e.workspace += data.trainCount * (inputNumel * inputBytes + targetBytes);
  e.dataSet = (data.trainCount + data.testCount) * (inputNumel * 4 + targetBytes);
  return e;
}

DataOptions dataOptionsOf(const RunConfig& c) {
  DataOptions d = c.data;
  if (d.seed == 0) d.seed = c.seed;
  d.batchSize = c.train.batchSize;
  if (c.model.name == "recipe_mlp") d.width = c.model.width;
  if (c.model.name == "gpt") d.sequence = c.model.block;
  return d;
}

std::optional<std::int64_t> generatedDataBytes(const DataOptions& d) {
  if (d.name != "spirals" && d.name != "circles" && d.name != "blobs") return std::nullopt;
  const std::int64_t n = d.samples > 0 ? d.samples : 1000;
  // Per sample: 2 float coordinates and a label byte, held twice (the generated set and its
  // train/test copies), plus the 8-byte indices of the split: 34 bytes, rounded up to 40.
  constexpr std::int64_t kBytesPerSample = 40;
  if (n > std::numeric_limits<std::int64_t>::max() / kBytesPerSample) return std::numeric_limits<std::int64_t>::max();
  return n * kBytesPerSample;
}

namespace {
// The shapes of an image data set from its plan (a listing or the files' sizes; nothing decoded).
DataShapes shapesOfPlan(const ImageDataPlan& p) {
  DataShapes s;
  s.sample = p.sample;
  s.outputs = p.classes;
  s.trainCount = p.trainCount;
  s.testCount = p.testCount;
  return s;
}
}  // namespace

std::optional<DataShapes> generatedDataShapes(const DataOptions& d) {
  if (isImageDataSet(d.name)) return shapesOfPlan(*planImageData(d));
  DataShapes s;
  if (d.name == "synthetic") {
    s.sample = {d.width};
    s.outputs = d.targetWidth > 0 ? d.targetWidth : d.width;
    s.classification = false;
    s.trainCount = d.batches * d.batchSize;
    return s;
  }
  if (!generatedDataBytes(d)) return std::nullopt;
  const std::int64_t n = d.samples > 0 ? d.samples : 1000;
  s.sample = {2};
  s.outputs = d.classes > 0 ? d.classes : 3;
  s.testCount = static_cast<std::int64_t>(static_cast<double>(n) * d.testFraction);
  s.trainCount = n - s.testCount;
  return s;
}

void refuseDataThatCannotFit(const DataOptions& d) {
  // Image data: from the folder's listing or the files' sizes, before anything is decoded
  // (data.image_size=1024 on a large folder must not start decoding).
  if (isImageDataSet(d.name)) {
    if (auto problem = imageDataMemoryProblem(*planImageData(d))) throw ConfigError(*problem);
    return;
  }
  const auto needed = generatedDataBytes(d);
  if (!needed) return;
  const auto available = hostMemoryAvailable();
  if (available && *needed > *available)
    throw ConfigError("data.samples=" + std::to_string(d.samples) + " needs ≈ " + formatBytes(*needed) +
                      " to generate the " + d.name + " data set; " + formatBytes(*available) + " available");
}

DataShapes dataShapesOf(const RunConfig& c) {
  refuseDataThatCannotFit(dataOptionsOf(c));
  // Image folders and CIFAR-10: their shapes and counts follow from the listing; the UI asks on
  // its own thread and must not decode thousands of images to learn them.
  if (isImageDataSet(c.data.name)) {
    DataShapes s = shapesOfPlan(*planImageData(dataOptionsOf(c)));
    s.emulatedCompute = emulatesCompute(c);
    return s;
  }
  const DataSplit split = loadDataset(dataOptionsOf(c));
  DataShapes s;
  s.sample = split.train.sampleShape;
  s.classification = split.train.isClassification();
  s.outputs = s.classification ? split.train.numClasses : split.train.targetDim;
  s.trainCount = split.train.count;
  s.testCount = split.test.count;
  s.emulatedCompute = emulatesCompute(c);
  return s;
}

bool emulatesCompute(const RunConfig& c) {
  if (c.computeDtype() == DType::F32) return false;
  try {
    return !makeBackend(c.backend, BackendOptions{c.tf32, c.reducedPrecisionReduction})->nativeCompute(c.computeDtype());
  } catch (const std::exception&) {
    return false;  // no such backend: the Trainer will say so; the estimate assumes native compute
  }
}

MemoryEstimate estimateMemory(const RunConfig& c) { return estimateMemory(c, dataShapesOf(c)); }

std::optional<std::int64_t> hostMemoryAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  std::int64_t kib = 0;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::string modelSettingsText(const ModelConfig& m) {
  if (m.name == "recipe_mlp")
    return "model.width=" + std::to_string(m.width) + ", model.layers=" + std::to_string(m.layers);
  if (m.name == "cnn") return "model.cnn=" + m.cnn;
  if (m.name == "gpt")
    return "model.layers=" + std::to_string(m.layers) + ", model.heads=" + std::to_string(m.heads) +
           ", model.embd=" + std::to_string(m.embd) + ", model.block=" + std::to_string(m.block);
  if (m.name == "resnet")
    return "model.depth=" + std::to_string(m.depth) + ", model.base_width=" +
           (m.baseWidth > 0 ? std::to_string(m.baseWidth) : std::string("default"));
  std::string hidden;
  for (std::size_t i = 0; i < m.hidden.size(); ++i) {
    if (i) hidden += ',';  // (not `(i ? "," : "") + ...`: GCC 12 warns about it, -Wrestrict)
    hidden += std::to_string(m.hidden[i]);
  }
  return "model.hidden=" + hidden;
}

std::optional<std::string> memoryRefusal(const RunConfig& c, const MemoryEstimate& e,
                                         std::int64_t needed, std::int64_t available,
                                         const std::string& where) {
  if (needed <= available) return std::nullopt;
  return modelSettingsText(c.model) + " (batch " + std::to_string(c.train.batchSize) + ", " +
         std::string(precisionModeName(c.mode)) + ") needs " + e.summary() +
         // Before the data set is generated its bytes count too, and the message says so.
         (needed > e.tracked() ? " and its data set " + formatBytes(needed - e.tracked()) : std::string()) + "; " +
         formatBytes(available) + " available" + (where.empty() ? "" : " on " + where);
}

}  // namespace amp
