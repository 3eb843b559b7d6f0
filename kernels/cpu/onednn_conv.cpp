#include "kernels/cpu/onednn_conv.h"

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

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

memory::data_type toDnnl(MatType t) {
  return t == MatType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
}

// One argument of a primitive: the caller's plain buffer and, when the primitive wants another
// layout, the primitive's own buffer plus the reorder between the two.
struct ConvArg {
  int id = 0;
  bool isInput = true;
  bool reordered = false;
  memory user;  // plain layout; its data handle is set per call
  memory prim;  // what the primitive reads or writes (the same object when not reordered)
  dnnl::reorder reorder;
};

struct CachedConv {
  std::string impl;
  dnnl::primitive prim;
  std::vector<ConvArg> args;  // in the order execute() receives the data pointers
};

ConvArg makeArg(int id, bool isInput, const memory::desc& userMd, const memory::desc& primMd) {
  auto& eng = cpuEngine();
  ConvArg a;
  a.id = id;
  a.isInput = isInput;
  a.user = memory(userMd, eng, DNNL_MEMORY_NONE);
  if (primMd == userMd) {
    a.prim = a.user;
  } else {
    a.reordered = true;
    a.prim = memory(primMd, eng);  // owned by oneDNN, lives as long as the cache entry
    a.reorder = isInput ? dnnl::reorder(a.user, a.prim) : dnnl::reorder(a.prim, a.user);
  }
  return a;
}

// The descriptors of one problem: plain ones for the callers' buffers, and the ones the
// primitive is created with (format_tag::any in Auto layout).
struct ConvDescs {
  memory::dims srcDims, weiDims, dstDims, biasDims, strides, padding;
  memory::desc md(const memory::dims& dims, MatType t, Tag plain, bool any) const {
    return memory::desc(dims, toDnnl(t), any ? Tag::any : plain);
  }
};

ConvDescs descsFor(const ConvShape& s) {
  return {{s.n, s.c, s.h, s.w},     {s.k, s.c, s.r, s.s}, {s.n, s.k, s.outH(), s.outW()},
          {s.k},                    {s.strideH, s.strideW}, {s.padH, s.padW}};
}

// Backward primitives need the forward primitive descriptor as a hint (it tells oneDNN which
// forward implementation, and so which layouts, the backward pass pairs with).
dnnl::convolution_forward::primitive_desc forwardHint(const ConvDescs& d, MatType in) {
  using namespace dnnl;
  convolution_forward::desc desc(prop_kind::forward_training, algorithm::convolution_direct,
                                 d.md(d.srcDims, in, Tag::nchw, true),
                                 d.md(d.weiDims, in, Tag::oihw, true),
                                 d.md(d.dstDims, in, Tag::nchw, true), d.strides, d.padding,
                                 d.padding);
  return convolution_forward::primitive_desc(desc, cpuEngine());
}

std::unique_ptr<CachedConv> create(ConvPass pass, MatType in, MatType out, const ConvShape& s,
                                   bool bias, bool any) {
  using namespace dnnl;
  const ConvDescs d = descsFor(s);
  const auto plainSrc = [&](MatType t) { return d.md(d.srcDims, t, Tag::nchw, false); };
  const auto plainWei = [&](MatType t) { return d.md(d.weiDims, t, Tag::oihw, false); };
  const auto plainDst = [&](MatType t) { return d.md(d.dstDims, t, Tag::nchw, false); };
  const auto plainBias = [&](MatType t) { return d.md(d.biasDims, t, Tag::x, false); };
  auto entry = std::make_unique<CachedConv>();
  switch (pass) {
    case ConvPass::Forward: {
      const auto src = d.md(d.srcDims, in, Tag::nchw, any);
      const auto wei = d.md(d.weiDims, in, Tag::oihw, any);
      const auto dst = d.md(d.dstDims, out, Tag::nchw, any);
      auto desc = bias ? convolution_forward::desc(prop_kind::forward_training,
                                                   algorithm::convolution_direct, src, wei,
                                                   plainBias(in), dst, d.strides, d.padding,
                                                   d.padding)
                       : convolution_forward::desc(prop_kind::forward_training,
                                                   algorithm::convolution_direct, src, wei, dst,
                                                   d.strides, d.padding, d.padding);
      convolution_forward::primitive_desc pd(desc, cpuEngine());
      entry->impl = pd.impl_info_str();
      entry->prim = convolution_forward(pd);
      entry->args.push_back(makeArg(DNNL_ARG_SRC, true, plainSrc(in), pd.src_desc()));
      entry->args.push_back(makeArg(DNNL_ARG_WEIGHTS, true, plainWei(in), pd.weights_desc()));
      if (bias) entry->args.push_back(makeArg(DNNL_ARG_BIAS, true, plainBias(in), pd.bias_desc()));
      entry->args.push_back(makeArg(DNNL_ARG_DST, false, plainDst(out), pd.dst_desc()));
      break;
    }
    case ConvPass::BackwardData: {
      convolution_backward_data::desc desc(
          algorithm::convolution_direct, d.md(d.srcDims, out, Tag::nchw, any),
          d.md(d.weiDims, in, Tag::oihw, any), d.md(d.dstDims, in, Tag::nchw, any), d.strides,
          d.padding, d.padding);
      convolution_backward_data::primitive_desc pd(desc, cpuEngine(), forwardHint(d, in));
      entry->impl = pd.impl_info_str();
      entry->prim = convolution_backward_data(pd);
      entry->args.push_back(makeArg(DNNL_ARG_DIFF_DST, true, plainDst(in), pd.diff_dst_desc()));
      entry->args.push_back(makeArg(DNNL_ARG_WEIGHTS, true, plainWei(in), pd.weights_desc()));
      entry->args.push_back(makeArg(DNNL_ARG_DIFF_SRC, false, plainSrc(out), pd.diff_src_desc()));
      break;
    }
    case ConvPass::BackwardWeights: {
      const auto src = d.md(d.srcDims, in, Tag::nchw, any);
      const auto dWei = d.md(d.weiDims, out, Tag::oihw, any);
      const auto dDst = d.md(d.dstDims, in, Tag::nchw, any);
      auto desc = bias ? convolution_backward_weights::desc(algorithm::convolution_direct, src,
                                                            dWei, plainBias(out), dDst,
                                                            d.strides, d.padding, d.padding)
                       : convolution_backward_weights::desc(algorithm::convolution_direct, src,
                                                            dWei, dDst, d.strides, d.padding,
                                                            d.padding);
      convolution_backward_weights::primitive_desc pd(desc, cpuEngine(), forwardHint(d, in));
      entry->impl = pd.impl_info_str();
      entry->prim = convolution_backward_weights(pd);
      entry->args.push_back(makeArg(DNNL_ARG_SRC, true, plainSrc(in), pd.src_desc()));
      entry->args.push_back(makeArg(DNNL_ARG_DIFF_DST, true, plainDst(in), pd.diff_dst_desc()));
      entry->args.push_back(
          makeArg(DNNL_ARG_DIFF_WEIGHTS, false, plainWei(out), pd.diff_weights_desc()));
      if (bias)
        entry->args.push_back(
            makeArg(DNNL_ARG_DIFF_BIAS, false, plainBias(out), pd.diff_bias_desc()));
      break;
    }
  }
  return entry;
}

using Key = std::array<std::int64_t, 16>;

CachedConv& lookup(ConvPass pass, MatType in, MatType out, const ConvShape& s, bool bias) {
  if (s.n <= 0 || s.c <= 0 || s.h <= 0 || s.w <= 0 || s.k <= 0 || s.r <= 0 || s.s <= 0 ||
      s.strideH <= 0 || s.strideW <= 0 || s.padH < 0 || s.padW < 0 || s.outH() <= 0 ||
      s.outW() <= 0)
    throw std::invalid_argument("convolution: invalid geometry");
  const ConvLayout layout = g_layout.load(std::memory_order_relaxed);
  // One cache per thread: runs on different threads never share mutable oneDNN objects.
  thread_local std::map<Key, std::unique_ptr<CachedConv>> cache;
  const Key key{int(pass), int(in),  int(out),  s.n,       s.c,       s.h,  s.w,  s.k,
                s.r,       s.s,      s.strideH, s.strideW, s.padH,    s.padW, bias, int(layout)};
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, create(pass, in, out, s, bias, layout == ConvLayout::Auto)).first;
  return *it->second;
}

// Runs a cached convolution on the callers' buffers (one pointer per argument, in order):
// inputs reordered in, the primitive, outputs reordered out.
void execute(CachedConv& cc, std::initializer_list<const void*> handles) {
  thread_local dnnl::stream stream(cpuEngine());
  std::unordered_map<int, memory> args;
  auto h = handles.begin();
  for (ConvArg& a : cc.args) {
    a.user.set_data_handle(const_cast<void*>(*h++));
    if (a.isInput && a.reordered) a.reorder.execute(stream, a.user, a.prim);
    args.emplace(a.id, a.prim);
  }
  cc.prim.execute(stream, args);
  for (ConvArg& a : cc.args)
    if (!a.isInput && a.reordered) a.reorder.execute(stream, a.prim, a.user);
  stream.wait();
}

}  // namespace

void setConvLayout(ConvLayout layout) { g_layout.store(layout, std::memory_order_relaxed); }
ConvLayout convLayout() { return g_layout.load(std::memory_order_relaxed); }

void convForward(MatType in, MatType out, const ConvShape& s, const void* src, const void* wei,
                 const void* bias, void* dst) {
  CachedConv& cc = lookup(ConvPass::Forward, in, out, s, bias != nullptr);
  if (bias)
    execute(cc, {src, wei, bias, dst});
  else
    execute(cc, {src, wei, dst});
}

void convBackwardData(MatType in, MatType out, const ConvShape& s, const void* diffDst,
                      const void* wei, void* diffSrc) {
  execute(lookup(ConvPass::BackwardData, in, out, s, false), {diffDst, wei, diffSrc});
}

void convBackwardWeights(MatType in, MatType out, const ConvShape& s, const void* src,
                         const void* diffDst, void* diffWei, void* diffBias) {
  CachedConv& cc = lookup(ConvPass::BackwardWeights, in, out, s, diffBias != nullptr);
  if (diffBias)
    execute(cc, {src, diffDst, diffWei, diffBias});
  else
    execute(cc, {src, diffDst, diffWei});
}

std::string convImplementation(ConvPass pass, MatType in, MatType out, const ConvShape& s,
                               bool bias) {
  const CachedConv& cc = lookup(pass, in, out, s, bias);
  std::string layouts;
  for (const ConvArg& a : cc.args)
    if (a.reordered) layouts = " (reordered to blocked layouts)";
  return cc.impl + layouts;
}

}  // namespace amp::cpu
