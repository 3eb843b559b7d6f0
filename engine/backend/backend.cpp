#include "engine/backend/backend.h"

#include <stdexcept>

namespace amp {

Tensor Backend::empty(const Shape& shape, DType dtype, MemCategory category,
                      MemoryFormat format) {
  for (auto d : shape)
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shapeString(shape));
  if (format == MemoryFormat::ChannelsLast && shape.size() != 4)
    throw std::logic_error("a channels-last tensor must be (N, C, H, W), got " + shapeString(shape));
  const std::size_t bytes = static_cast<std::size_t>(shapeNumel(shape)) * dtypeSize(dtype);
  return Tensor(std::make_shared<Buffer>(*this, bytes, category), shape, dtype, format);
}

Tensor Backend::zeros(const Shape& shape, DType dtype, MemCategory category,
                      MemoryFormat format) {
  Tensor t = empty(shape, dtype, category, format);
  fill(t, 0.f);
  return t;
}

Tensor Backend::fromHost(std::span<const float> values, const Shape& shape, DType dtype,
                         MemCategory category) {
  if (static_cast<std::int64_t>(values.size()) != shapeNumel(shape))
    throw std::invalid_argument("fromHost: " + std::to_string(values.size()) +
                                " values for shape " + shapeString(shape));
  Tensor t = empty(shape, dtype, category);
  uploadFloat(t, values);
  return t;
}

Tensor Backend::fromHostInt(std::span<const std::int32_t> values, const Shape& shape,
                            MemCategory category) {
  if (static_cast<std::int64_t>(values.size()) != shapeNumel(shape))
    throw std::invalid_argument("fromHostInt: size does not match shape " + shapeString(shape));
  Tensor t = empty(shape, DType::I32, category);
  uploadInt(t, values);
  return t;
}

Tensor Backend::cast(const Tensor& src, DType dtype, MemCategory category) {
  Tensor t = empty(src.shape(), dtype, category, src.format());  // a cast keeps the format
  castInto(src, t);
  return t;
}

// ---- memory formats ----------------------------------------------------------------------
Tensor Backend::toFormat(const Tensor& src, MemoryFormat format,
                         std::optional<MemCategory> category) {
  if (src.format() == format) return src;
  Tensor t = empty(src.shape(), src.dtype(), category.value_or(src.category()), format);
  convertFormatInto(src, t);
  return t;
}

void Backend::conv2dBackward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor* dx,
                             Tensor& dw, Tensor* dbias, const Conv2dGeometry& g) {
  conv2dBackwardWeights(dy, x, dw, dbias, g);
  if (dx) conv2dBackwardData(dy, w, *dx, g);
}

void Backend::batchNormReluForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        Tensor& runningMean, Tensor& runningVar, float momentum,
                                        float eps, const Tensor* residual, Tensor& y,
                                        Tensor& saveMean, Tensor& saveInvStd) {
  if (residual && (residual->dtype() != y.dtype() || residual->numel() != y.numel()))
    throw std::invalid_argument("batch_norm + relu: the residual must match the output");
  batchNormForwardTrain(x, gamma, beta, runningMean, runningVar, momentum, eps, y, saveMean,
                        saveInvStd);
  if (residual) add(y, *residual, y);  // elementwise in place: each element reads then writes
  activationForward(Activation::ReLU, y, y);
}

void Backend::batchNormReluBackward(const Tensor& dy, const Tensor& reluOut, const Tensor& x,
                                    const Tensor& gamma, const Tensor& saveMean,
                                    const Tensor& saveInvStd, Tensor& dx, Tensor& dgamma,
                                    Tensor& dbeta) {
  Tensor masked = empty(dy.shape(), dy.dtype(), MemCategory::Activations, dy.format());
  activationBackward(Activation::ReLU, reluOut, reluOut, dy, masked);
  batchNormBackward(masked, x, gamma, saveMean, saveInvStd, dx, dgamma, dbeta);
}

void Backend::addLayerNormForward(const Tensor& a, const Tensor& b, const Tensor& gamma,
                                  const Tensor& beta, float eps, Tensor& sum, Tensor& y,
                                  Tensor& mean, Tensor& rstd) {
  add(a, b, sum);
  layerNormForward(sum, gamma, beta, eps, y, mean, rstd);
}

void Backend::causalAttentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                                     float scale, Tensor& probs, Tensor* pv, Tensor& y) {
  {
    Tensor scores = empty({q.dim(0), q.dim(1), k.dim(1)}, q.dtype(), MemCategory::Activations);
    gemmBatched(q, false, k, true, scores);
    causalSoftmaxForward(scores, scale, probs);
  }
  if (pv) castInto(probs, *pv);
  gemmBatched(pv ? *pv : probs, false, v, false, y);
}

void Backend::causalAttentionBackward(const Tensor& dy, const Tensor& q, const Tensor& k,
                                      const Tensor& v, const Tensor& probs, const Tensor& p,
                                      float scale, Tensor& dq, Tensor& dk, Tensor& dv) {
  const Shape square{q.dim(0), q.dim(1), k.dim(1)};
  Tensor ds = empty(square, q.dtype(), MemCategory::Activations);
  {
    Tensor dp = empty(square, v.dtype(), MemCategory::Activations);
    gemmBatched(dy, false, v, true, dp);
    gemmBatched(p, true, dy, false, dv);
    causalSoftmaxBackward(probs, dp, scale, ds);
  }
  gemmBatched(ds, false, k, false, dq);
  gemmBatched(ds, true, q, false, dk);
}

}  // namespace amp
