// CUDA backend: the ops a GPT-style transformer adds (backend.h, "transformers") with our
// kernels (kernels/cuda/transformer_kernels.h) and the attention products as cuBLASLt
// strided-batched GEMMs. The argument checks are the CPU backend's (backend_checks, with its op
// names), made before anything is launched, so a refused call changes nothing and both backends
// refuse alike. Nothing here waits on the host: each op is a few stream-ordered launches, with
// any scratch (the embedding backward's sorted rows) in a workspace tensor freed on return (the
// allocator hands it out again only to work queued later).
//
// One difference from the CPU: a token outside the vocabulary is refused there, where the
// tokens are in host memory; here they are on the device and looking would cost a
// synchronisation per step, so the forward writes NaN into that row (the loss then shows it)
// and the backward adds it to no row.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "kernels/cuda/transformer_kernels.h"

namespace amp {

using cudabk::floatCode;

namespace {

cuda::FloatIn in(const Tensor& t, const char* op) { return {floatCode(t, op), t.rawData()}; }
cuda::FloatOut out(Tensor& t, const char* op) { return {floatCode(t, op), t.rawData()}; }

cuda::EmbeddingShape embeddingShape(const checks::EmbeddingDims& d, std::int64_t T) {
  return {d.rows, d.vocab, d.width, d.positions, T};
}

cuda::HeadShape headShape(const checks::HeadDims& d, int part) {
  return {d.batch, d.t, d.heads, d.headDim, d.parts, part};
}

}  // namespace

void CudaBackend::embeddingForward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                                   std::int64_t T, Tensor& y) {
  useDevice();
  const char* op = "embedding";
  const auto d = checks::embedding(tokens, wte, wpe, T, y);
  cuda::launchEmbeddingForward(embeddingShape(d, T), tokens.data<std::int32_t>(), in(wte, op),
                               in(wpe, op), out(y, op), stream());
  checkLaunch(op, cudabk::shapes({&tokens, &wte, &wpe, &y}));
}

void CudaBackend::embeddingBackward(const Tensor& dy, const Tensor& tokens, std::int64_t T,
                                    Tensor& dwte, Tensor& dwpe) {
  useDevice();
  const char* op = "embedding backward";
  const auto d = checks::embedding(tokens, dwte, dwpe, T, dy);
  const cuda::EmbeddingShape s = embeddingShape(d, T);
  const std::int64_t bytes = cuda::embeddingBackwardWorkspaceBytes(s);
  Tensor workspace;
  if (bytes > 0) workspace = empty({(bytes + 3) / 4}, DType::F32, MemCategory::Workspace);
  cuda::launchEmbeddingBackward(s, in(dy, op), tokens.data<std::int32_t>(), out(dwte, op),
                                out(dwpe, op), workspace.rawData(), bytes, stream());
  checkLaunch(op, cudabk::shapes({&dy, &tokens, &dwte, &dwpe}));
}

void CudaBackend::layerNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   float eps, Tensor& y, Tensor& mean, Tensor& rstd) {
  useDevice();
  const char* op = "layer_norm";
  const auto d = checks::layerNorm(x, gamma, beta, y, mean, rstd, op);
  cuda::launchLayerNormForward(d.rows, d.width, in(x, op), in(gamma, op), in(beta, op), eps,
                               out(y, op), mean.data<float>(), rstd.data<float>(), stream());
  checkLaunch(op, cudabk::shapes({&x, &gamma, &y}));
}

void CudaBackend::layerNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& rstd, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta) {
  useDevice();
  const char* op = "layer_norm backward";
  const auto d = checks::layerNorm(x, gamma, dgamma, dx, mean, rstd, op);
  if (!dy.defined() || dy.numel() != x.numel() || dbeta.numel() != d.width)
    throw std::invalid_argument("layer_norm backward: dy " + shapeString(dy.shape()) +
                                " or the bias gradient does not match x " + shapeString(x.shape()));
  // The parameter gradients' row-block sums (bias_grad_order.h's blocked order), in workspace.
  const auto partialFloats = static_cast<std::int64_t>(cuda::layerNormParamPartialFloats(d.rows, d.width));
  const Tensor partials = empty({partialFloats > 0 ? partialFloats : 1}, DType::F32, MemCategory::Workspace);
  cuda::launchLayerNormBackward(d.rows, d.width, in(dy, op), in(x, op), in(gamma, op),
                                mean.data<float>(), rstd.data<float>(), out(dx, op),
                                out(dgamma, op), out(dbeta, op), static_cast<float*>(partials.rawData()),
                                stream());
  checkLaunch(op, cudabk::shapes({&dy, &x, &gamma, &dx}));
}

void CudaBackend::causalSoftmaxForward(const Tensor& scores, float scale, Tensor& probs) {
  useDevice();
  const char* op = "softmax";
  const auto d = checks::causalSoftmax(scores, probs, op);
  cuda::launchCausalSoftmaxForward(d.matrices, d.t, in(scores, op), scale, out(probs, op),
                                   stream());
  checkLaunch("causal softmax", cudabk::shapes({&scores, &probs}));
}

void CudaBackend::causalSoftmaxBackward(const Tensor& probs, const Tensor& dprobs, float scale,
                                        Tensor& dscores) {
  useDevice();
  const char* op = "softmax backward";
  const auto d = checks::causalSoftmax(probs, dprobs, op);
  checks::causalSoftmax(probs, dscores, op);
  cuda::launchCausalSoftmaxBackward(d.matrices, d.t, in(probs, op), in(dprobs, op), scale,
                                    out(dscores, op), stream());
  checkLaunch("causal softmax backward", cudabk::shapes({&probs, &dprobs, &dscores}));
}

void CudaBackend::splitHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) {
  useDevice();
  const char* op = "split_heads";
  const auto d = checks::heads(x, y, heads, part, op);
  cuda::launchSplitHeads(headShape(d, part), in(x, op), out(y, op), stream());
  checkLaunch(op, cudabk::shapes({&x, &y}));
}

void CudaBackend::mergeHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) {
  useDevice();
  const char* op = "merge_heads";
  const auto d = checks::heads(y, x, heads, part, op);
  cuda::launchMergeHeads(headShape(d, part), in(x, op), out(y, op), stream());
  checkLaunch(op, cudabk::shapes({&x, &y}));
}

void CudaBackend::gemmBatched(const Tensor& a, bool transA, const Tensor& b, bool transB,
                              Tensor& c) {
  useDevice();
  const auto d = checks::gemmBatched(a, transA, b, transB, c);
  cuda::GemmShape s = gemmShape(d.m, d.n, d.k, transA, transB, a, c, "bmm");
  s.batch = d.batch;
  const double flops = 2.0 * double(d.batch) * double(d.m) * double(d.n) * double(d.k);
  timeInGemmCounters(flops, [&] {
    try {
      m_gemm->run(s, a.rawData(), b.rawData(), nullptr, c.rawData(), m_stream);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + " [" + cudabk::shapes({&a, &b, &c}) + "]");
    }
  });
}

}  // namespace amp
