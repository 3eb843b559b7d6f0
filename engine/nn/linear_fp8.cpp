// Linear under amp.mode=fp8 (engine/amp/fp8_context.h): the forward GEMM, the input-gradient GEMM
// and the weight-gradient GEMM take quantised operands, each quantised along that GEMM's
// reduction dimension as the recipe says (per-tensor recipes quantise each tensor once a step
// and reuse it, as Transformer Engine does). The weight is quantised from its fp32 master, the
// input and the output gradient from the dtype they arrive in (bf16 under autocast). Outputs:
// y and dx in the autocast dtype (bf16), dW in fp32 into .grad, the bias gradient from the
// unquantised dy as in bf16 AMP. The GEMMs multiply the dequantised operands in fp32 (exact
// products of fp8 values; the accumulation model, when on, replaces the fp32 accumulation).
#include <stdexcept>

#include "engine/amp/fp8_context.h"
#include "engine/nn/linear.h"
#include "kernels/common/float16.h"

namespace amp {

// C = op(A) . op(B) in fp32, from host operands (A: m x k after op, B: k x n after op).
Tensor Linear::gemmFp8(LayerContext& ctx, const std::vector<float>& a, bool transA, const std::vector<float>& b,
                       bool transB, std::int64_t m, std::int64_t n, std::int64_t k, const Tensor* bias) {
  Backend& be = ctx.backend;
  Tensor c = be.empty({m, n}, DType::F32, MemCategory::Activations);
  if (ctx.fp8->accumulatorModel()) {
    // The model takes row-major A (m x k) and B as (n x k): transpose on the host as needed.
    std::vector<float> ra(std::size_t(m * k)), rb(std::size_t(n * k)), rc(std::size_t(m * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) ra[std::size_t(i * k + p)] = transA ? a[std::size_t(p * m + i)] : a[std::size_t(i * k + p)];
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) rb[std::size_t(j * k + p)] = transB ? b[std::size_t(j * k + p)] : b[std::size_t(p * n + j)];
    gemmWithAccumulatorModel(ra.data(), rb.data(), rc.data(), m, n, k, ctx.fp8->accumBits(), ctx.fp8->accumPromote());
    if (bias) {
      const std::vector<float> bv = be.toHostFloat(*bias);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) rc[std::size_t(i * n + j)] += bv[std::size_t(j)];
    }
    be.uploadFloat(c, rc);
    return c;
  }
  const Tensor ta = be.fromHost(a, transA ? Shape{k, m} : Shape{m, k}, DType::F32, MemCategory::Workspace);
  const Tensor tb = be.fromHost(b, transB ? Shape{n, k} : Shape{k, n}, DType::F32, MemCategory::Workspace);
  be.gemm(ta, transA, tb, transB, c, bias);
  return c;
}

Tensor Linear::forwardFp8(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  Fp8Context& f8 = *ctx.fp8;
  const std::int64_t rows = x.dim(0);
  const DType out = ctx.autocast.enabled() ? ctx.autocast.lowDtype() : DType::BF16;
  std::vector<float> xv = be.toHostFloat(x), wv = be.toHostFloat(weight().value);
  if (ctx.training && !f8.perTensor()) m_fp8X = xv;
  f8.quantize(m_name, Fp8Role::Input, Fp8Gemm::Forward, xv, rows, m_in, ctx.training);
  f8.quantize(m_name, Fp8Role::Weight, Fp8Gemm::Forward, wv, m_out, m_in, ctx.training);
  // The bias as autocast hands it to a bf16 GEMM: rounded to the output dtype, added in fp32.
  Tensor bias;
  if (m_hasBias) {
    std::vector<float> bv = be.toHostFloat(m_bias.value);
    for (float& v : bv) v = out == DType::F16 ? roundToHalf(v) : roundToBf16(v);
    bias = be.fromHost(bv, {m_out}, DType::F32, MemCategory::Workspace);
  }
  Tensor y32 = gemmFp8(ctx, xv, false, wv, true, rows, m_out, m_in, m_hasBias ? &bias : nullptr);
  Tensor y = be.empty({rows, m_out}, out, MemCategory::Activations);
  be.castInto(y32, y);
  if (ctx.training && f8.perTensor()) {
    m_fp8Xq = std::move(xv);
    m_fp8Wq = std::move(wv);
  }
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "linear", ctx.autocast.effectivePolicy("linear"),
        ctx.autocast.enabled(), {x.dtype(), weight().value.dtype()}, DType::F32, out, 0, 0,
        "fp8: " + f8.describe() + "; x and w quantised, fp32 accumulation"};
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
  std::vector<float> dyv = be.toHostFloat(dy);
  // Input gradient: dx = dy . W, reducing over `out`.
  // Per-tensor recipes quantise dy once for both GEMMs (in place); block recipes keep dyv for
  // the weight gradient's own quantisation.
  std::vector<float> dyD = f8.perTensor() ? std::move(dyv) : dyv;
  f8.quantize(m_name, Fp8Role::GradOutput, Fp8Gemm::Dgrad, dyD, rows, m_out, true);
  Tensor dx;
  if (needInputGrad) {
    std::vector<float> wD;
    if (f8.perTensor()) {
      wD = m_fp8Wq;
    } else {
      wD = be.toHostFloat(weight().value);
      f8.quantize(m_name, Fp8Role::Weight, Fp8Gemm::Dgrad, wD, m_out, m_in, true);
    }
    const Tensor dx32 = gemmFp8(ctx, dyD, false, wD, false, rows, m_in, m_out, nullptr);
    dx = be.empty({rows, m_in}, m_inputDtype, MemCategory::Activations);
    be.castInto(dx32, dx);
    dx = dx.reshaped(m_inputShape);
  }
  // Weight gradient: dW = dy^T . x, reducing over the batch; fp32 into .grad.
  std::vector<float> dyW, xW;
  if (f8.perTensor()) {
    dyW = std::move(dyD);
    xW = std::move(m_fp8Xq);
  } else {
    dyW = std::move(dyv);
    f8.quantize(m_name, Fp8Role::GradOutput, Fp8Gemm::Wgrad, dyW, rows, m_out, true);
    xW = std::move(m_fp8X);
    f8.quantize(m_name, Fp8Role::Input, Fp8Gemm::Wgrad, xW, rows, m_in, true);
  }
  Tensor dw = gemmFp8(ctx, dyW, true, xW, false, m_out, m_in, rows, nullptr);
  accumulateGrad(be, weight(), std::move(dw));
  if (m_hasBias) {
    Tensor db = be.empty({m_out}, dyIn.dtype(), MemCategory::Gradients);
    be.biasGrad(dy, db);
    accumulateGrad(be, m_bias, std::move(db));
  }
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "linear_backward", ctx.autocast.policy().policyFor("linear"),
        false, {dyIn.dtype()}, DType::F32, needInputGrad ? m_inputDtype : DType::F32, 0, 0,
        "fp8: dy quantised; dx and dW from quantised operands, fp32 accumulation"};
  });
  releaseSaved();
  return dx;
}

}  // namespace amp
