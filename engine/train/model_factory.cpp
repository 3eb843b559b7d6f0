#include "engine/train/model_factory.h"

#include <sstream>
#include <stdexcept>

#include "engine/config/config_schema.h"
#include "engine/nn/activation_layer.h"
#include "engine/nn/batch_norm.h"
#include "engine/nn/conv2d.h"
#include "engine/nn/dropout.h"
#include "engine/nn/linear.h"
#include "engine/nn/max_pool2d.h"
#include "engine/train/gpt_builder.h"
#include "engine/train/resnet_builder.h"

namespace amp {

namespace {

Activation activationOf(const ModelConfig& m) {
  auto a = parseActivation(m.activation);
  if (!a) throw ConfigError("model.activation: unknown '" + m.activation + "'");
  return *a;
}

std::unique_ptr<Sequential> recipeMlp(const ModelConfig& m, std::int64_t in, std::int64_t out,
                                      bool flatten) {
  // The recipe: (layers - 1) x [Linear(width), ReLU] then Linear(width).
  auto net = std::make_unique<Sequential>();
  if (flatten) net->add(std::make_unique<Flatten>());
  std::int64_t prev = in;
  for (int i = 0; i + 1 < m.layers; ++i) {
    net->add(std::make_unique<Linear>(prev, m.width));
    net->add(std::make_unique<ActivationLayer>(activationOf(m)));
    prev = m.width;
  }
  net->add(std::make_unique<Linear>(prev, out));
  return net;
}

std::unique_ptr<Sequential> mlp(const ModelConfig& m, std::int64_t in, std::int64_t out,
                                bool flatten) {
  auto net = std::make_unique<Sequential>();
  if (flatten) net->add(std::make_unique<Flatten>());
  std::int64_t prev = in;
  for (std::int64_t h : m.hidden) {
    net->add(std::make_unique<Linear>(prev, h));
    if (m.batchnorm) net->add(std::make_unique<BatchNorm>(h));
    net->add(std::make_unique<ActivationLayer>(activationOf(m)));
    if (m.dropout > 0) net->add(std::make_unique<Dropout>(m.dropout));
    prev = h;
  }
  net->add(std::make_unique<Linear>(prev, out));
  return net;
}

std::unique_ptr<Sequential> cnn(const ModelConfig& m, const Shape& sample, std::int64_t out) {
  if (sample.size() != 3)
    throw ConfigError("model.name: cnn needs image data (C,H,W); this data set's samples are " +
                      shapeString(sample));
  auto net = std::make_unique<Sequential>();
  Shape s = sample;
  bool flat = false;
  std::stringstream ss(m.cnn);
  std::string block;
  auto bad = [&](const std::string& why) {
    throw ConfigError("model.cnn: block '" + block + "' " + why +
                      " (expected conv:C, pool or fc:N, comma-separated)");
  };
  auto sizeOf = [&](const std::string& b, std::size_t prefix) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(b.substr(prefix), &used);
      if (used != b.size() - prefix || v <= 0) bad("needs a positive size");
      return static_cast<std::int64_t>(v);
    } catch (const std::logic_error&) {
      bad("needs a positive size");
    }
    return std::int64_t{0};
  };
  while (std::getline(ss, block, ',')) {
    if (block.rfind("conv:", 0) == 0) {
      if (flat) bad("comes after an fc block");
      const std::int64_t c = sizeOf(block, 5);
      net->add(std::make_unique<Conv2d>(s[0], c, 3, 1));
      if (m.batchnorm) net->add(std::make_unique<BatchNorm>(c));
      net->add(std::make_unique<ActivationLayer>(activationOf(m)));
      s[0] = c;
    } else if (block == "pool") {
      if (flat) bad("comes after an fc block");
      if (s[1] < 2 || s[2] < 2) bad("would pool a " + shapeString(s) + " map below 1x1");
      net->add(std::make_unique<MaxPool2d>(2, 2));
      s = {s[0], s[1] / 2, s[2] / 2};
    } else if (block.rfind("fc:", 0) == 0) {
      const std::int64_t n = sizeOf(block, 3);
      if (!flat) {
        net->add(std::make_unique<Flatten>());
        s = {shapeNumel(s)};
        flat = true;
      }
      net->add(std::make_unique<Linear>(s[0], n));
      if (m.batchnorm) net->add(std::make_unique<BatchNorm>(n));
      net->add(std::make_unique<ActivationLayer>(activationOf(m)));
      if (m.dropout > 0) net->add(std::make_unique<Dropout>(m.dropout));
      s = {n};
    } else {
      bad("is not understood");
    }
  }
  if (!flat) net->add(std::make_unique<Flatten>());
  net->add(std::make_unique<Linear>(shapeNumel(s), out));
  return net;
}

}  // namespace

std::unique_ptr<Sequential> buildModel(const ModelConfig& m, const Shape& sampleShape,
                                       std::int64_t outputs) {
  const std::int64_t in = shapeNumel(sampleShape);
  const bool flatten = sampleShape.size() > 1;
  std::unique_ptr<Sequential> net;
  if (m.name == "recipe_mlp") net = recipeMlp(m, in, outputs, flatten);
  else if (m.name == "mlp") net = mlp(m, in, outputs, flatten);
  else if (m.name == "cnn") net = cnn(m, sampleShape, outputs);
  else if (m.name == "resnet") net = buildResNet(m, sampleShape, outputs);
  else if (m.name == "gpt") net = buildGpt(m, sampleShape, outputs);
  else throw ConfigError("model.name: unknown model '" + m.name + "'");
  net->outputShape(sampleShape);  // validates the chain of shapes
  return net;
}

}  // namespace amp
