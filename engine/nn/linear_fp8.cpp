// Linear under amp.mode=fp8 (engine/amp/fp8_context.h): the forward GEMM, the input-gradient GEMM
// and the weight-gradient GEMM take quantised operands, each quantised along that GEMM's
// reduction dimension as the recipe says (per-tensor recipes quantise each tensor once a step
// and reuse it, as Transformer Engine does). The weight is quantised from its fp32 master, the
// input and the output gradient from the dtype they arrive in (bf16 under autocast). Operands are
// held as the hardware holds them (engine/backend/quantized_tensor.h): a byte per value (E2M1 two
// to a byte) and the scales, so what the layer saves for backward is what an fp8 run keeps; block
// recipes quantise the input in both orientations in the forward pass (rows for the forward GEMM,
// columns for the weight gradient's reduction over the batch), as Transformer Engine saves its
// MXFP8 activations. Outputs: y and dx in the autocast dtype (bf16), dW in fp32 into .grad, the
// bias gradient from the unquantised dy as in bf16 AMP. The GEMMs multiply the decoded operands
// in fp32 (exact products of fp8 values; the accumulation model, when on, replaces the fp32
// accumulation).
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "engine/amp/fp8_context.h"
#include "engine/nn/linear.h"

namespace amp {

namespace {

// "x e4m3, scale 24" / "dy e5m2, 1x32 E8M0 scales" / "w e2m1, 1x16 E4M3 scales, tensor scale 1.3e+04":
// an operand's format and scales, as the op trace names them.
std::string describeOperand(const char* name, const QuantizedTensor& q) {
  std::ostringstream s;
  s << name << " " << miniFormatName(q.spec.format) << ", ";
  switch (q.spec.scaling) {
    case QuantScaling::PerTensor: s << "scale " << q.tensorScale; break;
    case QuantScaling::Mx: s << "1x" << q.spec.block << " E8M0 scales"; break;
    case QuantScaling::Blockwise:
      s << (q.spec.square ? "128x128" : "1x128") << (q.spec.powerOfTwo ? " power-of-two" : " fp32") << " scales";
      break;
    case QuantScaling::Nvfp4:
      s << "1x16 E4M3 scales, tensor scale " << q.tensorScale << (q.spec.hadamard ? ", Hadamard" : "")
        << (q.spec.stochastic ? ", stochastic rounding" : "");
      break;
  }
  if (q.spec.scaling != QuantScaling::PerTensor) s << (q.spec.alongRows ? " down columns" : " along rows");
  return s.str();
}

}  // namespace

// C = op(A) . op(B) in fp32 from quantised operands, in memory category `cat`: the weight
// gradient is .grad's (Gradients), y's and dx's fp32 sums are scratch until cast (Workspace), so
// the memory chart's activations are what the layers keep.
Tensor Linear::gemmFp8(LayerContext& ctx, const QuantizedTensor& a, bool transA, const QuantizedTensor& b,
                       bool transB, const Tensor* bias, MemCategory cat) {
  Backend& be = ctx.backend;
  const std::int64_t m = transA ? a.cols : a.rows, n = transB ? b.rows : b.cols, k = transA ? a.rows : a.cols;
  Tensor c = be.empty({m, n}, DType::F32, cat);
  if (!ctx.fp8->accumulatorModel()) {
    be.gemmQuantized(a, transA, b, transB, c, bias);
    return c;
  }
  // The model takes row-major A (m x k) and B as (n x k): decoded, then transposed on the host.
  const auto decoded = [&](const QuantizedTensor& q) {
    Tensor t = be.empty({q.rows, q.cols}, DType::F32, MemCategory::Workspace);
    be.dequantize(q, t);
    return be.toHostFloat(t);
  };
  const std::vector<float> av = decoded(a), bv = decoded(b);
  std::vector<float> ra(std::size_t(m * k)), rb(std::size_t(n * k)), rc(std::size_t(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) ra[std::size_t(i * k + p)] = transA ? av[std::size_t(p * m + i)] : av[std::size_t(i * k + p)];
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = 0; p < k; ++p) rb[std::size_t(j * k + p)] = transB ? bv[std::size_t(j * k + p)] : bv[std::size_t(p * n + j)];
  gemmWithAccumulatorModel(ra.data(), rb.data(), rc.data(), m, n, k, ctx.fp8->accumBits(), ctx.fp8->accumPromote());
  if (bias) {
    const std::vector<float> bb = be.toHostFloat(*bias);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) rc[std::size_t(i * n + j)] += bb[std::size_t(j)];
  }
  be.uploadFloat(c, rc);
  return c;
}

Tensor Linear::forwardFp8(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  Fp8Context& f8 = *ctx.fp8;
  const DType out = ctx.autocast.enabled() ? ctx.autocast.lowDtype() : DType::BF16;
  QuantizedTensor xq, wq;
  f8.quantize(be, m_name, Fp8Role::Input, Fp8Gemm::Forward, x, m_in, xq, MemCategory::Activations, ctx.training);
  f8.quantize(be, m_name, Fp8Role::Weight, Fp8Gemm::Forward, weight().value, m_in, wq, MemCategory::Weights,
              ctx.training);
  // The bias as autocast hands it to a bf16 GEMM: rounded to the output dtype, added in fp32.
  Tensor bias;
  if (m_hasBias) {
    bias = be.empty({m_out}, DType::F32, MemCategory::Workspace);
    be.castInto(m_bias.value, bias);
    be.roundThrough(bias, out);
  }
  Tensor y32 = gemmFp8(ctx, xq, false, wq, true, m_hasBias ? &bias : nullptr, MemCategory::Workspace);
  // D's amax (the GEMM's output, bias included, before the cast): recorded with the layer's fp8
  // figures (Fp8Context::outputAmax). One pass of Backend::amax over y32: on a GPU our amax
  // kernel, since cuBLASLt computes D's amax only for an fp8 D and y32 is fp32.
  if (f8.recordsOutputs(ctx.training)) f8.recordOutputAmax(m_name, be.amax(y32));
  Tensor y = be.empty({x.dim(0), m_out}, out, MemCategory::Activations);
  be.castInto(y32, y);
  if (ctx.training) {
    if (f8.perTensor()) {  // one quantisation of each serves all three GEMMs
      m_fp8Xq = std::move(xq);
      m_fp8Wq = std::move(wq);
    } else {  // the weight gradient reduces over the batch: x quantised down its columns
      f8.quantize(be, m_name, Fp8Role::Input, Fp8Gemm::Wgrad, x, m_in, m_fp8Xq, MemCategory::Activations, true);
    }
  }
  const bool kept = ctx.training && f8.perTensor();  // xq and wq were moved into the saved ones
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "linear", ctx.autocast.effectivePolicy("linear"),
        ctx.autocast.enabled(), {x.dtype(), weight().value.dtype()}, DType::F32, out, 0, 0,
        "fp8: " + f8.describe() + "; " + describeOperand("x", kept ? m_fp8Xq : xq) + "; " +
            describeOperand("w", kept ? m_fp8Wq : wq) + "; fp32 accumulation"};
  });
  return y;
}

Tensor Linear::backwardFp8(LayerContext& ctx, const Tensor& dyIn, bool needInputGrad) {
  Backend& be = ctx.backend;
  Fp8Context& f8 = *ctx.fp8;
  if (dyIn.dim(dyIn.rank() - 1) != m_out)
    throw std::invalid_argument(describe() + ": output gradient " + shapeString(dyIn.shape()));
  const Tensor dy = dyIn.rank() == 2 ? dyIn : dyIn.reshaped({shapeNumel(dyIn.shape()) / m_out, m_out});
  const std::int64_t rows = dy.dim(0);
  // Input gradient: dx = dy . W, reducing over `out`. Per-tensor recipes quantise dy once for
  // both GEMMs; block recipes quantise it again down its columns for the weight gradient.
  QuantizedTensor dyq, wd;
  f8.quantize(be, m_name, Fp8Role::GradOutput, Fp8Gemm::Dgrad, dy, m_out, dyq, MemCategory::Activations, true);
  std::string wNote;
  Tensor dx;
  if (needInputGrad) {
    const QuantizedTensor* w = &m_fp8Wq;
    if (!f8.perTensor()) {
      f8.quantize(be, m_name, Fp8Role::Weight, Fp8Gemm::Dgrad, weight().value, m_in, wd, MemCategory::Workspace, true);
      w = &wd;
    }
    wNote = "; " + describeOperand("w", *w);
    const Tensor dx32 = gemmFp8(ctx, dyq, false, *w, false, nullptr, MemCategory::Workspace);
    dx = be.empty({rows, m_in}, m_inputDtype, MemCategory::Activations);
    be.castInto(dx32, dx);
    dx = dx.reshaped(m_inputShape);
  }
  // Weight gradient: dW = dy^T . x, reducing over the batch; fp32 into .grad.
  QuantizedTensor dyw;
  if (!f8.perTensor())
    f8.quantize(be, m_name, Fp8Role::GradOutput, Fp8Gemm::Wgrad, dy, m_out, dyw, MemCategory::Activations, true);
  const QuantizedTensor& dyW = f8.perTensor() ? dyq : dyw;
  Tensor dw = gemmFp8(ctx, dyW, true, m_fp8Xq, false, nullptr, MemCategory::Gradients);
  accumulateGrad(be, weight(), std::move(dw));
  if (m_hasBias) {
    Tensor db = be.empty({m_out}, dyIn.dtype(), MemCategory::Gradients);
    be.biasGrad(dy, db);
    accumulateGrad(be, m_bias, std::move(db));
  }
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "linear_backward", ctx.autocast.policy().policyFor("linear"),
        false, {dyIn.dtype()}, DType::F32, needInputGrad ? m_inputDtype : DType::F32, 0, 0,
        "fp8: " + describeOperand("dy", dyq) + wNote + "; dW from " + describeOperand("dy", dyW) + " and " +
            describeOperand("x", m_fp8Xq) + "; fp32 accumulation"};
  });
  releaseSaved();
  return dx;
}

}  // namespace amp
