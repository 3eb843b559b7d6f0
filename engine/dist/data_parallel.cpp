#include "engine/dist/data_parallel.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/rank_average.h"

namespace amp {

Batch shardBatch(const Batch& global, int rank, int ranks) {
  Batch b;
  const std::int64_t n = global.size;
  const std::int64_t local = rank < n % ranks ? n / ranks + 1 : n / ranks;
  const std::size_t feat = n ? global.x.size() / std::size_t(n) : 0;
  const std::size_t tok = n ? global.tokens.size() / std::size_t(n) : 0;
  const std::size_t lab = n ? global.labels.size() / std::size_t(n) : 0;  // 1, or the sequence
  const std::size_t tgt = n ? global.targets.size() / std::size_t(n) : 0;
  b.size = local;
  b.xShape = global.xShape;
  if (!b.xShape.empty()) b.xShape[0] = local;
  auto take = [&](const auto& from, auto& to, std::size_t width) {
    to.resize(std::size_t(local) * width);
    for (std::int64_t i = 0; i < local; ++i)
      std::copy_n(from.begin() + std::ptrdiff_t(std::size_t(rank + i * ranks) * width), width,
                  to.begin() + std::ptrdiff_t(std::size_t(i) * width));
  };
  take(global.x, b.x, feat);
  take(global.tokens, b.tokens, tok);
  take(global.labels, b.labels, lab);
  take(global.targets, b.targets, tgt);
  if (!global.rows.empty()) take(global.rows, b.rows, 1);
  return b;
}

namespace {
// DDP's average: the fp32 sum over the ranks, then divided by their number, by the expression
// the NCCL path's kernel uses (kernels/common/rank_average.h); the upload rounds 16-bit ones once.
void divideBy(std::span<float> values, float ranks) {
  for (float& v : values) v = rankAverage(v, ranks);
}
}  // namespace

void allReduceGradients(Backend& be, Communicator& comm, const std::vector<Parameter*>& backwardOrder,
                        std::size_t bucketFloats) {
  const float ranks = static_cast<float>(comm.size());
  // Every rank takes part with every parameter (zeros where it had no rows).
  std::vector<Tensor*> grads;
  for (Parameter* p : backwardOrder) {
    if (!p->grad.defined()) p->grad = be.zeros(p->value.shape(), p->value.dtype(), MemCategory::Gradients);
    grads.push_back(&p->grad);
  }
  if (be.allReduceOnDevice(grads, comm)) return;  // NCCL, one GPU per rank
  std::vector<Parameter*> bucket;
  std::vector<float> values;
  auto flush = [&] {
    if (bucket.empty()) return;
    comm.allReduceSum(values, "gradient all-reduce");
    divideBy(values, ranks);
    std::size_t at = 0;
    for (Parameter* p : bucket) {
      const auto n = static_cast<std::size_t>(p->grad.numel());
      be.uploadFloat(p->grad, std::span<const float>(values.data() + at, n));
      at += n;
    }
    bucket.clear();
    values.clear();
  };
  for (Parameter* p : backwardOrder) {
    if (float* host = be.hostFloats(p->grad)) {
      // fp32 in this process's memory (the CPU backend): summed where it is, no copies (three
      // copies of a 12 MB recipe's gradients cost more than the all-reduce itself on 2 cores).
      flush();  // keep backward order across the two paths
      const auto n = static_cast<std::size_t>(p->grad.numel());
      comm.allReduceSum(std::span<float>(host, n), "gradient all-reduce");
      divideBy(std::span<float>(host, n), ranks);
      continue;
    }
    const std::vector<float> g = be.toHostFloat(p->grad);
    if (!bucket.empty() && values.size() + g.size() > bucketFloats) flush();
    bucket.push_back(p);
    values.insert(values.end(), g.begin(), g.end());
  }
  flush();
}

void broadcastModel(Backend& be, Communicator& comm, Sequential& model) {
  auto send = [&](Tensor& t) {
    std::vector<std::uint8_t> bytes = be.toHostBytes(t);
    comm.broadcast(bytes, 0, "broadcast of rank 0's weights");
    be.uploadBytes(t, bytes);
  };
  for (Parameter* p : model.parameters()) send(p->value);
  for (auto& [name, t] : model.buffers()) send(*t);
  forgetWeightCopies(model.parameters());  // the masters were rewritten
}

std::uint64_t modelDigest(Backend& be, Sequential& model) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&](const Tensor& t) {
    for (std::uint8_t byte : be.toHostBytes(t)) {
      h ^= byte;
      h *= 0x100000001b3ull;
    }
  };
  for (Parameter* p : model.parameters()) add(p->value);
  for (auto& [name, t] : model.buffers()) add(*t);
  return h;
}

}  // namespace amp
