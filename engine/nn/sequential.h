// A sequential model (like torch.nn.Sequential): layers named by index, so parameter names
// match PyTorch's state_dict ("0.weight", "2.bias"), or by the names a builder gives them.
#pragma once

#include <memory>
#include <vector>

#include "engine/nn/layer.h"

namespace amp {

class Sequential {
 public:
  void add(std::unique_ptr<Layer> layer);
  // A layer with a name of its own (a ResNet's "stem.0", "layers.3", "fc"), as a PyTorch module
  // attribute: its parameters are then "<name>.weight". Names must be unique.
  void add(std::unique_ptr<Layer> layer, std::string name);
  // Allocates every parameter in `dtype` (fp32 masters, or fp16 in pure-fp16 mode), drawing
  // initial values from one seeded generator in layer order.
  void initialize(Backend& be, std::uint64_t seed, DType dtype, MemCategory category);

  Tensor forward(LayerContext& ctx, const Tensor& x);
  // Backpropagates dy (gradient of the model's output); the input needs no gradient.
  void backward(LayerContext& ctx, const Tensor& dy);
  void releaseSaved();
  void zeroGrad();  // set_to_none, as PyTorch 2's default

  std::vector<Parameter*> parameters();
  std::vector<std::pair<std::string, Tensor*>> buffers();
  // Tied parameters under their second name ("lm_head.weight"), for state_dict-shaped exports.
  std::vector<std::pair<std::string, Parameter*>> tiedParameters();
  std::int64_t parameterCount();
  const std::vector<std::unique_ptr<Layer>>& layers() const { return m_layers; }
  // One line per layer: "2  Linear(256 -> 256)  out (256)  params 65,792".
  std::vector<std::string> summary(const Shape& sampleShape);
  // Checks the chain of shapes; throws naming the layer that does not fit.
  Shape outputShape(const Shape& sampleShape) const;

 private:
  std::vector<std::unique_ptr<Layer>> m_layers;
};

}  // namespace amp
