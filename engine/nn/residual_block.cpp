#include "engine/nn/residual_block.h"

#include <stdexcept>

namespace amp {

ResidualBlock::ResidualBlock(std::int64_t inChannels, std::int64_t outChannels,
                             std::int64_t stride)
    : m_in(inChannels), m_out(outChannels), m_stride(stride),
      m_c1(inChannels, outChannels, 3, 1, stride, /*bias=*/false),
      m_c2(outChannels, outChannels, 3, 1, 1, /*bias=*/false),
      m_b1(outChannels), m_b2(outChannels) {
  if (stride != 1 || inChannels != outChannels) {
    m_shortConv = std::make_unique<Conv2d>(inChannels, outChannels, 1, 0, stride, false);
    m_shortBn = std::make_unique<BatchNorm>(outChannels);
  }
}

std::string ResidualBlock::describe() const {
  std::string s = "ResidualBlock(" + std::to_string(m_in) + " -> " + std::to_string(m_out);
  if (m_stride != 1) s += ", s" + std::to_string(m_stride);
  return s + (m_shortConv ? ", 1x1 projection)" : ", identity)");
}

void ResidualBlock::setName(std::string n) {
  Layer::setName(std::move(n));
  m_c1.setName(m_name + ".c1");
  m_b1.setName(m_name + ".b1");
  m_relu1.setName(m_name + ".relu1");
  m_c2.setName(m_name + ".c2");
  m_b2.setName(m_name + ".b2");
  m_relu2.setName(m_name + ".relu2");
  if (m_shortConv) {
    m_shortConv->setName(m_name + ".short.0");
    m_shortBn->setName(m_name + ".short.1");
  }
}

Shape ResidualBlock::outputShape(const Shape& in) const {
  // Both paths must arrive at one shape: conv1 (3x3, padding 1, stride s) and the 1x1 strided
  // projection both give floor((H - 1) / s) + 1 rows.
  const Shape main = m_c2.outputShape(m_c1.outputShape(in));
  const Shape shortcut = m_shortConv ? m_shortConv->outputShape(in) : in;
  if (main != shortcut)
    throw std::invalid_argument(describe() + ": the branch gives " + shapeString(main) +
                                " but the shortcut " + shapeString(shortcut));
  return main;
}

std::vector<const Conv2d*> ResidualBlock::convolutions() const {
  std::vector<const Conv2d*> out{&m_c1, &m_c2};
  if (m_shortConv) out.push_back(m_shortConv.get());
  return out;
}

std::vector<Parameter*> ResidualBlock::parameters() {
  // The peer's state_dict order: c1, b1, c2, b2, then the shortcut's convolution and norm.
  std::vector<Parameter*> out;
  for (Layer* part : std::initializer_list<Layer*>{&m_c1, &m_b1, &m_c2, &m_b2})
    for (Parameter* p : part->parameters()) out.push_back(p);
  if (m_shortConv) {
    for (Parameter* p : m_shortConv->parameters()) out.push_back(p);
    for (Parameter* p : m_shortBn->parameters()) out.push_back(p);
  }
  return out;
}

std::vector<std::pair<std::string, Tensor*>> ResidualBlock::buffers() {
  auto out = m_b1.buffers();
  for (auto& b : m_b2.buffers()) out.push_back(b);
  if (m_shortBn)
    for (auto& b : m_shortBn->buffers()) out.push_back(b);
  return out;
}

void ResidualBlock::initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) {
  // Module order, as PyTorch's constructor draws them: c1, b1, c2, b2, then the shortcut.
  m_c1.initialize(be, rng, dtype, category);
  m_b1.initialize(be, rng, dtype, category);
  m_c2.initialize(be, rng, dtype, category);
  m_b2.initialize(be, rng, dtype, category);
  if (m_shortConv) {
    m_shortConv->initialize(be, rng, dtype, category);
    m_shortBn->initialize(be, rng, dtype, category);
  }
}

Tensor ResidualBlock::forwardPart(LayerContext& ctx, Layer& part, const Tensor& x) {
  Tensor y = part.forward(ctx, x);
  if (ctx.observer) ctx.observer->activation(part.name(), y);
  return y;
}

Tensor ResidualBlock::backwardPart(LayerContext& ctx, Layer& part, const Tensor& dy,
                                   bool needInputGrad) {
  if (ctx.observer) ctx.observer->activationGrad(part.name(), dy);
  return part.backward(ctx, dy, needInputGrad);
}

Tensor ResidualBlock::forward(LayerContext& ctx, const Tensor& x) {
  // Training without an observer (every step but histogram steps): batch norm and the ReLU after
  // it, and the second batch norm with the add and the last ReLU, each in one pass.
  if (ctx.training && !ctx.observer) return forwardFused(ctx, x);
  Backend& be = ctx.backend;
  m_inputDtype = x.dtype();
  Tensor h = forwardPart(ctx, m_c1, x);
  h = forwardPart(ctx, m_b1, h);
  h = forwardPart(ctx, m_relu1, h);
  h = forwardPart(ctx, m_c2, h);
  h = forwardPart(ctx, m_b2, h);
  Tensor s = x;
  if (m_shortConv) {
    s = forwardPart(ctx, *m_shortConv, x);
    s = forwardPart(ctx, *m_shortBn, s);
  }
  // An identity shortcut carries the block's input in its format, the branch the convolutions'
  // (they differ only where a contiguous map enters a channels-last network): the add needs one.
  s = formatActivation(be, s, h.format());
  // The add is PyTorch's, not autocast's: no cast is inserted, the kernel reads both dtypes and
  // writes the promoted one.
  m_branchDtype = h.dtype();
  m_shortcutDtype = s.dtype();
  m_sumDtype = ctx.autocast.computeDtype("add", {h.dtype(), s.dtype()});
  Tensor sum = be.empty(h.shape(), m_sumDtype, MemCategory::Activations, h.format());
  be.add(h, s, sum);
  const std::string addName = m_name + ".add";
  ctx.autocast.record([&] {
    const bool mixed = m_branchDtype != m_shortcutDtype;
    return OpTraceEntry{TracePhase::Forward, addName, "add", ctx.autocast.effectivePolicy("add"),
        ctx.autocast.enabled(), {m_branchDtype, m_shortcutDtype}, m_sumDtype, m_sumDtype, 0, 0,
        mixed ? "residual add: mixed inputs promoted" : "residual add"};
  });
  if (ctx.observer) ctx.observer->activation(addName, sum);
  m_forwarded = true;
  return m_relu2.forward(ctx, sum);  // the block's output: Sequential reports it
}

Tensor ResidualBlock::forwardFused(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  m_inputDtype = x.dtype();
  Tensor h = m_c1.forward(ctx, x);
  const DType hd = h.dtype();
  h = m_b1.forwardRelu(ctx, h, nullptr);
  m_relu1.adoptOutput(ctx, hd, h);
  h = m_c2.forward(ctx, h);
  Tensor s = x;
  if (m_shortConv) s = m_shortBn->forward(ctx, m_shortConv->forward(ctx, x));
  s = formatActivation(be, s, h.format());  // as in forward(): one format for the add
  m_branchDtype = ctx.autocast.computeDtype("batch_norm", {h.dtype()});
  m_shortcutDtype = s.dtype();
  m_sumDtype = ctx.autocast.computeDtype("add", {m_branchDtype, m_shortcutDtype});
  m_forwarded = true;
  const std::string addName = m_name + ".add";
  auto recordAdd = [&](const char* note) {
    ctx.autocast.record([&] {
      return OpTraceEntry{TracePhase::Forward, addName, "add", ctx.autocast.effectivePolicy("add"),
          ctx.autocast.enabled(), {m_branchDtype, m_shortcutDtype}, m_sumDtype, m_sumDtype, 0, 0, note};
    });
  };
  if (m_sumDtype != m_branchDtype || m_shortcutDtype != m_branchDtype) {
    // Mixed dtypes promote: the separate add and ReLU (rare: a block fed fp32 under autocast).
    const Tensor b = m_b2.forward(ctx, h);
    Tensor sum = be.empty(b.shape(), m_sumDtype, MemCategory::Activations, b.format());
    be.add(b, s, sum);
    recordAdd("residual add: mixed inputs promoted");
    return m_relu2.forward(ctx, sum);
  }
  Tensor y = m_b2.forwardRelu(ctx, h, &s);
  recordAdd("residual add, fused with the batch norm before it and the ReLU after it");
  m_relu2.adoptOutput(ctx, m_sumDtype, y);
  return y;
}

Tensor ResidualBlock::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  if (!m_forwarded) throw std::logic_error(describe() + ": backward without forward");
  m_forwarded = false;
  Backend& be = ctx.backend;
  const Tensor dsum = m_relu2.backward(ctx, dy, true);
  const std::string addName = m_name + ".add";
  if (ctx.observer) ctx.observer->activationGrad(addName, dsum);
  // add's backward: the gradient goes to both inputs, each in its own dtype.
  int casts = 0;
  const Tensor dBranch = castActivation(be, dsum, m_branchDtype, casts);
  const Tensor dShortcut = castActivation(be, dsum, m_shortcutDtype, casts);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, addName, "add_backward", CastPolicy::PassThrough,
        false, {dsum.dtype()}, dsum.dtype(), dsum.dtype(), casts, 0,
        "the gradient to both inputs, each in its dtype"};
  });

  // The shortcut first, so the branch's conv1 is the last to report (its rounding counts are
  // then dropped below, with the shortcut's: the block's input gradient is their sum).
  Tensor dxShort;
  if (m_shortConv) {
    Tensor g = backwardPart(ctx, *m_shortBn, dShortcut, true);
    dxShort = backwardPart(ctx, *m_shortConv, g, needInputGrad);
  } else if (needInputGrad) {
    dxShort = dShortcut;
  }
  Tensor g = backwardPart(ctx, m_b2, dBranch, true);
  g = backwardPart(ctx, m_c2, g, true);
  if (ctx.observer) {  // histogram steps report the gradient between the ReLU and batch norm
    g = backwardPart(ctx, m_relu1, g, true);
    g = backwardPart(ctx, m_b1, g, true);
  } else {
    const Tensor y1 = m_relu1.takeOutputForFusedBackward(ctx, g);
    g = m_b1.backwardThroughRelu(ctx, g, y1, true);
  }
  Tensor dx = backwardPart(ctx, m_c1, g, needInputGrad);
  releaseSaved();
  if (!needInputGrad) return Tensor();
  if (ctx.observer) ctx.observer->discardInputGradRounding();
  // x fed both paths: its gradient is the sum of theirs, in x's dtype (both arrive in it), in
  // the branch's format (an identity shortcut's may differ: see forward()).
  Tensor total = be.empty(dx.shape(), m_inputDtype, MemCategory::Activations, dx.format());
  be.add(dx, formatActivation(be, dxShort, dx.format()), total);
  return total;
}

void ResidualBlock::releaseSaved() {
  for (Layer* part : std::initializer_list<Layer*>{&m_c1, &m_b1, &m_relu1, &m_c2, &m_b2, &m_relu2})
    part->releaseSaved();
  if (m_shortConv) {
    m_shortConv->releaseSaved();
    m_shortBn->releaseSaved();
  }
}

}  // namespace amp
