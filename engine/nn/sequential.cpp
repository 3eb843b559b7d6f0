#include "engine/nn/sequential.h"

#include <sstream>
#include <stdexcept>

#include "engine/data/rng.h"

namespace amp {

void Sequential::add(std::unique_ptr<Layer> layer) {
  add(std::move(layer), std::to_string(m_layers.size()));
}

void Sequential::add(std::unique_ptr<Layer> layer, std::string name) {
  for (const auto& l : m_layers)
    if (l->name() == name) throw std::logic_error("Sequential: two layers named '" + name + "'");
  layer->setName(std::move(name));
  m_layers.push_back(std::move(layer));
}

void Sequential::initialize(Backend& be, std::uint64_t seed, DType dtype, MemCategory category) {
  Rng rng(seed, /*stream=*/0x1417);  // a stream of its own: data draws never shift weights
  for (auto& l : m_layers) l->initialize(be, rng, dtype, category);
}

std::vector<std::pair<std::string, Parameter*>> Sequential::tiedParameters() {
  std::vector<std::pair<std::string, Parameter*>> out;
  for (auto& l : m_layers)
    for (auto& t : l->tiedParameters()) out.push_back(t);
  return out;
}

Tensor Sequential::forward(LayerContext& ctx, const Tensor& x) {
  Tensor h = x;
  for (auto& l : m_layers) {
    h = l->forward(ctx, h);
    if (ctx.observer) ctx.observer->activation(l->name(), h);
  }
  return h;
}

void Sequential::backward(LayerContext& ctx, const Tensor& dy) {
  // A layer needs its input's gradient only if some layer before it has parameters (the
  // model's input needs none): with Flatten first, the first Linear skips its dX GEMM.
  std::size_t firstTrainable = m_layers.size();
  for (std::size_t i = 0; i < m_layers.size(); ++i)
    if (!m_layers[i]->parameters().empty()) {
      firstTrainable = i;
      break;
    }
  Tensor g = dy;
  for (std::size_t i = m_layers.size(); i-- > 0;) {
    if (ctx.observer) ctx.observer->activationGrad(m_layers[i]->name(), g);
    g = m_layers[i]->backward(ctx, g, /*needInputGrad=*/i > firstTrainable);
    if (i <= firstTrainable) {
      for (std::size_t j = 0; j < i; ++j) m_layers[j]->releaseSaved();
      break;  // nothing below needs a gradient
    }
  }
}

void Sequential::releaseSaved() {
  for (auto& l : m_layers) l->releaseSaved();
}

void Sequential::zeroGrad() {
  for (Parameter* p : parameters()) {
    p->grad = Tensor();
    p->gradRoundThrough = DType::F32;
  }
}

std::vector<Parameter*> Sequential::parameters() {
  std::vector<Parameter*> out;
  for (auto& l : m_layers)
    for (Parameter* p : l->parameters()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor*>> Sequential::buffers() {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (auto& l : m_layers)
    for (auto& b : l->buffers()) out.push_back(b);
  return out;
}

std::int64_t Sequential::parameterCount() {
  std::int64_t n = 0;
  for (Parameter* p : parameters()) n += p->value.numel();
  return n;
}

Shape Sequential::outputShape(const Shape& sampleShape) const {
  Shape s = sampleShape;
  for (const auto& l : m_layers) {
    try {
      s = l->outputShape(s);
    } catch (const std::exception& e) {
      throw std::invalid_argument("model layer " + l->name() + " (" + l->describe() +
                                  "): " + e.what());
    }
  }
  return s;
}

std::vector<std::string> Sequential::summary(const Shape& sampleShape) {
  std::vector<std::string> lines;
  Shape s = sampleShape;
  for (auto& l : m_layers) {
    s = l->outputShape(s);
    std::int64_t n = 0;
    std::ostringstream ps;
    for (Parameter* p : l->parameters()) {
      n += p->value.numel();
      ps << ' ' << p->name << shapeString(p->value.shape());
    }
    std::ostringstream os;
    os << l->name() << "  " << l->describe() << "  out " << shapeString(s) << "  params " << n
       << ps.str();
    lines.push_back(os.str());
  }
  return lines;
}

}  // namespace amp
