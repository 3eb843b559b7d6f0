#include "kernels/cpu/onednn_conv.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/chunked.h"
#include "kernels/cpu/convert.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace amp::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<ConvLayout> g_layout{ConvLayout::Auto};

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// What oneDNN computes in for an operand type: fp16 goes through fp32.
memory::data_type computeType(ConvType t) {
  return t == ConvType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// One argument of a primitive: the caller's plain buffer and, when the primitive wants another
// layout, the primitive's own buffer plus the reorder between the two. An fp16 operand is
// staged: widened into (or rounded out of) an fp32 buffer that stands in for the caller's.
// Staging and reordered buffers live in a per-thread arena, only during a call, so caching
// many shapes (training and evaluation batch sizes) keeps no large buffers alive.
struct ConvArg {
  int id = 0;
  bool isInput = true;
  bool reordered = false;
  bool staged = false;
  std::size_t elements = 0;       // of the caller's buffer
  std::size_t stagingOffset = 0;  // in the arena, when staged
  std::size_t primOffset = 0;     // in the arena, when reordered
  memory user;                    // plain layout: the caller's buffer, or the staging buffer
  memory prim;  // what the primitive reads or writes (the same object when not reordered)
  dnnl::reorder reorder;
};

struct CachedConv {
  std::string impl;
  dnnl::primitive prim;
  std::vector<ConvArg> args;  // in the order execute() receives the data pointers
  std::size_t arenaBytes = 0;
};

std::size_t alignUp(std::size_t n) { return (n + 63) / 64 * 64; }

ConvArg makeArg(CachedConv& cc, int id, bool isInput, ConvType type, const memory::dims& dims,
                Tag plain, const memory::desc& primMd) {
  auto& eng = cpuEngine();
  ConvArg a;
  a.id = id;
  a.isInput = isInput;
  const memory::desc userMd(dims, computeType(type), plain);
  a.elements = userMd.get_size() / (type == ConvType::BF16 ? 2 : 4);
  a.user = memory(userMd, eng, DNNL_MEMORY_NONE);
  if (type == ConvType::F16) {
    a.staged = true;
    a.stagingOffset = cc.arenaBytes;
    cc.arenaBytes += alignUp(userMd.get_size());
  }
  if (primMd == userMd) {
    a.prim = a.user;
  } else {
    a.reordered = true;
    a.prim = memory(primMd, eng, DNNL_MEMORY_NONE);
    a.primOffset = cc.arenaBytes;
    cc.arenaBytes += alignUp(primMd.get_size());
    a.reorder = isInput ? dnnl::reorder(a.user, a.prim) : dnnl::reorder(a.prim, a.user);
  }
  return a;
}

// The per-thread arena: grows to the largest call seen, never shrinks.
std::byte* arena(std::size_t bytes) {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte[], Free> buffer;
  thread_local std::size_t capacity = 0;
  if (bytes > capacity) {
    buffer.reset();
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(64, alignUp(bytes))));
    if (!buffer) throw std::bad_alloc();
    capacity = bytes;
  }
  return buffer.get();
}

// The dimensions of one problem, and the descriptors the primitive is created with
// (format_tag::any in Auto layout, else the plain tags).
struct ConvDescs {
  memory::dims srcDims, weiDims, dstDims, biasDims, strides, padding;
  bool any = true;
  memory::desc md(const memory::dims& dims, ConvType t, Tag plain) const {
    return memory::desc(dims, computeType(t), any ? Tag::any : plain);
  }
};

ConvDescs descsFor(const ConvShape& s, bool any) {
  return {{s.n, s.c, s.h, s.w},
          {s.k, s.c, s.r, s.s},
          {s.n, s.k, s.outH(), s.outW()},
          {s.k},
          {s.strideH, s.strideW},
          {s.padH, s.padW},
          any};
}

// Backward primitives need the forward primitive descriptor as a hint (it tells oneDNN which
// forward implementation, and so which layouts, the backward pass pairs with).
dnnl::convolution_forward::primitive_desc forwardHint(const ConvDescs& d, ConvType in) {
  using namespace dnnl;
  convolution_forward::desc desc(prop_kind::forward_training, algorithm::convolution_direct,
                                 d.md(d.srcDims, in, Tag::nchw), d.md(d.weiDims, in, Tag::oihw),
                                 d.md(d.dstDims, in, Tag::nchw), d.strides, d.padding, d.padding);
  return convolution_forward::primitive_desc(desc, cpuEngine());
}

std::unique_ptr<CachedConv> create(ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
                                   bool bias, bool any) {
  using namespace dnnl;
  const ConvDescs d = descsFor(s, any);
  // Bias vectors are always plain (oneDNN keeps them so).
  const memory::desc biasIn(d.biasDims, computeType(in), Tag::x);
  const memory::desc biasOut(d.biasDims, computeType(out), Tag::x);
  auto e = std::make_unique<CachedConv>();
  auto& args = e->args;
  switch (pass) {
    case ConvPass::Forward: {
      const auto src = d.md(d.srcDims, in, Tag::nchw), wei = d.md(d.weiDims, in, Tag::oihw),
                 dst = d.md(d.dstDims, out, Tag::nchw);
      const auto fwd = prop_kind::forward_training;
      const auto alg = algorithm::convolution_direct;
      auto desc = bias ? convolution_forward::desc(fwd, alg, src, wei, biasIn, dst, d.strides,
                                                   d.padding, d.padding)
                       : convolution_forward::desc(fwd, alg, src, wei, dst, d.strides, d.padding,
                                                   d.padding);
      convolution_forward::primitive_desc pd(desc, cpuEngine());
      e->impl = pd.impl_info_str();
      e->prim = convolution_forward(pd);
      args.push_back(makeArg(*e, DNNL_ARG_SRC, true, in, d.srcDims, Tag::nchw, pd.src_desc()));
      args.push_back(
          makeArg(*e, DNNL_ARG_WEIGHTS, true, in, d.weiDims, Tag::oihw, pd.weights_desc()));
      if (bias)
        args.push_back(makeArg(*e, DNNL_ARG_BIAS, true, in, d.biasDims, Tag::x, pd.bias_desc()));
      args.push_back(makeArg(*e, DNNL_ARG_DST, false, out, d.dstDims, Tag::nchw, pd.dst_desc()));
      break;
    }
    case ConvPass::BackwardData: {
      convolution_backward_data::desc desc(
          algorithm::convolution_direct, d.md(d.srcDims, out, Tag::nchw),
          d.md(d.weiDims, in, Tag::oihw), d.md(d.dstDims, in, Tag::nchw), d.strides, d.padding,
          d.padding);
      convolution_backward_data::primitive_desc pd(desc, cpuEngine(), forwardHint(d, in));
      e->impl = pd.impl_info_str();
      e->prim = convolution_backward_data(pd);
      args.push_back(
          makeArg(*e, DNNL_ARG_DIFF_DST, true, in, d.dstDims, Tag::nchw, pd.diff_dst_desc()));
      args.push_back(
          makeArg(*e, DNNL_ARG_WEIGHTS, true, in, d.weiDims, Tag::oihw, pd.weights_desc()));
      args.push_back(
          makeArg(*e, DNNL_ARG_DIFF_SRC, false, out, d.srcDims, Tag::nchw, pd.diff_src_desc()));
      break;
    }
    case ConvPass::BackwardWeights: {
      const auto src = d.md(d.srcDims, in, Tag::nchw), dWei = d.md(d.weiDims, out, Tag::oihw),
                 dDst = d.md(d.dstDims, in, Tag::nchw);
      const auto alg = algorithm::convolution_direct;
      auto desc = bias ? convolution_backward_weights::desc(alg, src, dWei, biasOut, dDst,
                                                            d.strides, d.padding, d.padding)
                       : convolution_backward_weights::desc(alg, src, dWei, dDst, d.strides,
                                                            d.padding, d.padding);
      convolution_backward_weights::primitive_desc pd(desc, cpuEngine(), forwardHint(d, in));
      e->impl = pd.impl_info_str();
      e->prim = convolution_backward_weights(pd);
      args.push_back(makeArg(*e, DNNL_ARG_SRC, true, in, d.srcDims, Tag::nchw, pd.src_desc()));
      args.push_back(
          makeArg(*e, DNNL_ARG_DIFF_DST, true, in, d.dstDims, Tag::nchw, pd.diff_dst_desc()));
      args.push_back(makeArg(*e, DNNL_ARG_DIFF_WEIGHTS, false, out, d.weiDims, Tag::oihw,
                             pd.diff_weights_desc()));
      if (bias)
        args.push_back(
            makeArg(*e, DNNL_ARG_DIFF_BIAS, false, out, d.biasDims, Tag::x, pd.diff_bias_desc()));
      break;
    }
  }
  return e;
}

using Key = std::array<std::int64_t, 16>;

CachedConv& lookup(ConvPass pass, ConvType in, ConvType out, const ConvShape& s, bool bias) {
  if (!s.valid())
    throw std::invalid_argument("convolution: invalid geometry");
  const ConvLayout layout = g_layout.load(std::memory_order_relaxed);
  // One cache per thread: runs on different threads never share mutable oneDNN objects.
  thread_local std::map<Key, std::unique_ptr<CachedConv>> cache;
  const Key key{int(pass), int(in), int(out),  s.n,       s.c,    s.h,    s.w,  s.k,
                s.r,       s.s,     s.strideH, s.strideW, s.padH, s.padW, bias, int(layout)};
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, create(pass, in, out, s, bias, layout == ConvLayout::Auto)).first;
  return *it->second;
}

// Runs a cached convolution on the callers' buffers (one pointer per argument, in order):
// fp16 inputs widened, inputs reordered in, the primitive, outputs reordered out, fp16 outputs
// rounded.
void execute(CachedConv& cc, std::initializer_list<const void*> handles) {
  thread_local dnnl::stream stream(cpuEngine());
  std::byte* scratch = cc.arenaBytes ? arena(cc.arenaBytes) : nullptr;
  std::unordered_map<int, memory> args;
  auto h = handles.begin();
  for (ConvArg& a : cc.args) {
    const void* p = *h++;
    if (!a.staged) {
      a.user.set_data_handle(const_cast<void*>(p));
    } else {
      auto* wide = reinterpret_cast<float*>(scratch + a.stagingOffset);
      a.user.set_data_handle(wide);
      if (a.isInput) {
        const auto* half = static_cast<const std::uint16_t*>(p);
        forEachChunk(static_cast<std::int64_t>(a.elements), [&](std::int64_t at, std::int64_t n) {
          convertF16ToF32(half + at, wide + at, static_cast<std::size_t>(n));
        });
      }
    }
    if (a.reordered) a.prim.set_data_handle(scratch + a.primOffset);
    if (a.isInput && a.reordered) a.reorder.execute(stream, a.user, a.prim);
    args.emplace(a.id, a.prim);
  }
  cc.prim.execute(stream, args);
  for (ConvArg& a : cc.args)
    if (!a.isInput && a.reordered) a.reorder.execute(stream, a.prim, a.user);
  stream.wait();
  h = handles.begin();
  for (ConvArg& a : cc.args) {
    auto* half = static_cast<std::uint16_t*>(const_cast<void*>(*h++));
    if (a.isInput || !a.staged) continue;
    const auto* wide = reinterpret_cast<const float*>(scratch + a.stagingOffset);
    forEachChunk(static_cast<std::int64_t>(a.elements), [&](std::int64_t at, std::int64_t n) {
      convertF32ToF16(wide + at, half + at, static_cast<std::size_t>(n));
    });
  }
}

}  // namespace

void setConvLayout(ConvLayout layout) { g_layout.store(layout, std::memory_order_relaxed); }

void convForward(ConvType in, ConvType out, const ConvShape& s, const void* src, const void* wei,
                 const void* bias, void* dst) {
  CachedConv& cc = lookup(ConvPass::Forward, in, out, s, bias != nullptr);
  if (bias)
    execute(cc, {src, wei, bias, dst});
  else
    execute(cc, {src, wei, dst});
}

void convBackwardData(ConvType in, ConvType out, const ConvShape& s, const void* diffDst,
                      const void* wei, void* diffSrc) {
  execute(lookup(ConvPass::BackwardData, in, out, s, false), {diffDst, wei, diffSrc});
}

void convBackwardWeights(ConvType in, ConvType out, const ConvShape& s, const void* src,
                         const void* diffDst, void* diffWei, void* diffBias) {
  CachedConv& cc = lookup(ConvPass::BackwardWeights, in, out, s, diffBias != nullptr);
  if (diffBias)
    execute(cc, {src, diffDst, diffWei, diffBias});
  else
    execute(cc, {src, diffDst, diffWei});
}

std::size_t convScratchBytes(ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
                             bool bias) {
  return lookup(pass, in, out, s, bias).arenaBytes;
}

std::string convImplementation(ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
                               bool bias) {
  const CachedConv& cc = lookup(pass, in, out, s, bias);
  std::string layouts;
  for (const ConvArg& a : cc.args)
    if (a.reordered) layouts = " (reordered to blocked layouts)";
  return cc.impl + layouts;
}

}  // namespace amp::cpu
