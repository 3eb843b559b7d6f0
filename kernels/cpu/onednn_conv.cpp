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

#include "oneapi/dnnl/dnnl.hpp"

namespace amp::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<ConvLayout> g_layout{ConvLayout::Auto};

// What oneDNN computes in for an operand type: fp16 goes through fp32, and so does bf16 where
// oneDNN has no bf16 convolution (`emulated`).
memory::data_type computeType(ConvType t, bool emulated) {
  return t == ConvType::BF16 && !emulated ? memory::data_type::bf16 : memory::data_type::f32;
}

// One argument of a primitive: the caller's plain buffer and, when the primitive wants another
// layout, the primitive's own buffer plus the reorder between the two. A 16-bit operand that
// the primitive reads or writes in fp32 is staged: widened into (or rounded out of) an fp32 buffer that stands in for the caller's.
// Staging and reordered buffers live in a per-thread arena, only during a call, so caching
// many shapes (training and evaluation batch sizes) keeps no large buffers alive.
struct ConvArg {
  int id = 0;
  bool isInput = true;
  bool reordered = false;
  bool staged = false;
  ConvType type = ConvType::F32;  // of the caller's buffer
  std::size_t elements = 0;       // of the caller's buffer
  std::size_t stagingOffset = 0;  // in the arena, when staged
  std::size_t primOffset = 0;     // in the arena, when reordered
  memory user;                    // plain layout: the caller's buffer, or the staging buffer
  memory prim;  // what the primitive reads or writes (the same object when not reordered)
  dnnl::reorder reorder;
};

struct CachedConv {
  std::string impl;
  bool emulated = false;  // 16-bit operands computed in fp32
  dnnl::primitive prim;
  std::vector<ConvArg> args;  // in the order execute() receives the data pointers
  std::size_t arenaBytes = 0;
};

ConvArg makeArg(CachedConv& cc, int id, bool isInput, ConvType type, const memory::dims& dims,
                Tag plain, const memory::desc& primMd) {
  auto& eng = cpuEngine();
  ConvArg a;
  a.id = id;
  a.isInput = isInput;
  a.type = type;
  const memory::desc userMd(dims, computeType(type, cc.emulated), plain);
  a.elements = userMd.get_size() / (userMd.data_type() == memory::data_type::bf16 ? 2 : 4);
  a.user = memory(userMd, eng, DNNL_MEMORY_NONE);
  if (type != ConvType::F32 && userMd.data_type() == memory::data_type::f32) {
    a.staged = true;
    a.stagingOffset = cc.arenaBytes;
    cc.arenaBytes += alignScratch(userMd.get_size());
  }
  if (primMd == userMd) {
    a.prim = a.user;
  } else {
    a.reordered = true;
    a.prim = memory(primMd, eng, DNNL_MEMORY_NONE);
    a.primOffset = cc.arenaBytes;
    cc.arenaBytes += alignScratch(primMd.get_size());
    a.reorder = isInput ? dnnl::reorder(a.user, a.prim) : dnnl::reorder(a.prim, a.user);
  }
  return a;
}

// The dimensions of one problem, and the descriptors the primitive is created with
// (format_tag::any in Auto layout, else the plain tags).
struct ConvDescs {
  memory::dims srcDims, weiDims, dstDims, biasDims, strides, padding;
  bool any = true;
  bool emulated = false;
  memory::desc md(const memory::dims& dims, ConvType t, Tag plain) const {
    return memory::desc(dims, computeType(t, emulated), any ? Tag::any : plain);
  }
};

ConvDescs descsFor(const ConvShape& s, bool any, bool emulated) {
  return {{s.n, s.c, s.h, s.w},
          {s.k, s.c, s.r, s.s},
          {s.n, s.k, s.outH(), s.outW()},
          {s.k},
          {s.strideH, s.strideW},
          {s.padH, s.padW},
          any,
          emulated};
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

// Throws dnnl::error when oneDNN has no implementation for these types on this CPU.
std::unique_ptr<CachedConv> createWith(ConvPass pass, ConvType in, ConvType out,
                                       const ConvShape& s, bool bias, bool any, bool emulated) {
  using namespace dnnl;
  const ConvDescs d = descsFor(s, any, emulated);
  // Bias vectors are always plain (oneDNN keeps them so).
  const memory::desc biasIn(d.biasDims, computeType(in, emulated), Tag::x);
  const memory::desc biasOut(d.biasDims, computeType(out, emulated), Tag::x);
  auto e = std::make_unique<CachedConv>();
  e->emulated = emulated;
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

std::string describeConv(ConvPass pass, ConvType in, ConvType out, const ConvShape& s) {
  const char* names[] = {"forward", "backward-data", "backward-weights"};
  auto dims = [](std::initializer_list<std::int64_t> v) {
    std::string t = "(";
    for (auto x : v) t += (t.size() > 1 ? "x" : "") + std::to_string(x);
    return t + ")";
  };
  return std::string(names[int(pass)]) + ", input " + dims({s.n, s.c, s.h, s.w}) + ", weight " +
         dims({s.k, s.c, s.r, s.s}) + ", stride " + dims({s.strideH, s.strideW}) + ", padding " +
         dims({s.padH, s.padW}) + ", " + elemTypeName(in) + " in, " + elemTypeName(out) + " out";
}

// The native primitive where oneDNN has one; bf16 without one (below AVX-512) and fp16 are
// emulated through fp32.
std::unique_ptr<CachedConv> create(ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
                                   bool bias, bool any, bool forceEmulation) {
  std::unique_ptr<CachedConv> e;
  try {
    if (in == ConvType::BF16 && !forceEmulation) {
      try {
        return createWith(pass, in, out, s, bias, any, false);
      } catch (const dnnl::error& err) {
        // No bf16 convolution on this CPU: fall through to the fp32 emulation. Any other
        // failure (memory, arguments) is reported below, not emulated around.
        if (err.status != dnnl_unimplemented) throw;
      }
    }
    e = createWith(pass, in, out, s, bias, any, true);
  } catch (const dnnl::error& err) {
    throwComputeError("convolution", describeConv(pass, in, out, s), err.what());
  }
  if (in != ConvType::F32)
    e->impl += std::string(" (") + elemTypeName(in) + " emulated: fp32 math on " +
               elemTypeName(in) + " values)";
  return e;
}

using Key = std::array<std::int64_t, 17>;

CachedConv& lookup(ConvPass pass, ConvType in, ConvType out, const ConvShape& s, bool bias) {
  if (!s.valid())
    throw std::invalid_argument("convolution: invalid geometry");
  const ConvLayout layout = g_layout.load(std::memory_order_relaxed);
  // One cache per thread: runs on different threads never share mutable oneDNN objects.
  thread_local std::map<Key, std::unique_ptr<CachedConv>> cache;
  const bool force = forceBf16Emulation() && in == ConvType::BF16;
  const Key key{int(pass), int(in), int(out),  s.n,       s.c,    s.h,    s.w,  s.k,    s.r,
                s.s,       s.strideH, s.strideW, s.padH, s.padW, bias, int(layout), force};
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, create(pass, in, out, s, bias, layout == ConvLayout::Auto, force)).first;
  return *it->second;
}

// An input argument already in the form a primitive reads (reordered, or widened to fp32), left
// in the arena by the pass before: the backward passes share their output gradient this way.
struct Prepared {
  int id = 0;
  memory::desc md;
  void* data = nullptr;
};

// Runs a cached convolution on the callers' buffers (one pointer per argument, in order):
// staged 16-bit inputs widened, inputs reordered in, the primitive, outputs reordered out,
// staged outputs rounded. `scratch` holds the call's arena (cc.arenaBytes); an input that
// `prepared` already holds in the form the primitive wants is neither widened nor reordered.
// Returns that form of `keep` (an input id), for the next pass.
Prepared run(CachedConv& cc, std::initializer_list<const void*> handles, std::byte* scratch,
             const Prepared* prepared = nullptr, int keep = 0) {
  thread_local dnnl::stream stream(cpuEngine());
  std::unordered_map<int, memory> args;
  Prepared kept;
  auto h = handles.begin();
  for (ConvArg& a : cc.args) {
    const void* p = *h++;
    if (a.isInput && prepared && prepared->id == a.id && prepared->md == a.prim.get_desc()) {
      a.prim.set_data_handle(prepared->data);
      args.emplace(a.id, a.prim);
      continue;
    }
    if (!a.staged) {
      a.user.set_data_handle(const_cast<void*>(p));
    } else {
      auto* wide = reinterpret_cast<float*>(scratch + a.stagingOffset);
      a.user.set_data_handle(wide);
      if (a.isInput) widenToF32(a.type, p, wide, a.elements);
    }
    if (a.reordered) a.prim.set_data_handle(scratch + a.primOffset);
    if (a.isInput && a.reordered) a.reorder.execute(stream, a.user, a.prim);
    if (a.id == keep) kept = {a.id, a.prim.get_desc(), a.prim.get_data_handle()};
    args.emplace(a.id, a.prim);
  }
  cc.prim.execute(stream, args);
  for (ConvArg& a : cc.args)
    if (!a.isInput && a.reordered) a.reorder.execute(stream, a.prim, a.user);
  stream.wait();
  h = handles.begin();
  for (ConvArg& a : cc.args) {
    void* dst = const_cast<void*>(*h++);
    if (a.isInput || !a.staged) continue;
    narrowFromF32(a.type, reinterpret_cast<const float*>(scratch + a.stagingOffset), dst,
                  a.elements);
  }
  return kept;
}

void run(CachedConv& cc, std::initializer_list<const void*> handles) {
  run(cc, handles, cc.arenaBytes ? scratchArena(cc.arenaBytes) : nullptr);
}

// run() with oneDNN's failures said in one line naming the pass, types, shapes and CPU.
void execute(CachedConv& cc, ConvPass pass, ConvType in, ConvType out, const ConvShape& s,
             std::initializer_list<const void*> handles) {
  try {
    run(cc, handles);
  } catch (const dnnl::error& err) {
    throwComputeError("convolution", describeConv(pass, in, out, s), err.what());
  }
}

}  // namespace

void setConvLayout(ConvLayout layout) { g_layout.store(layout, std::memory_order_relaxed); }

void convForward(ConvType in, ConvType out, const ConvShape& s, const void* src, const void* wei,
                 const void* bias, void* dst) {
  CachedConv& cc = lookup(ConvPass::Forward, in, out, s, bias != nullptr);
  if (bias)
    execute(cc, ConvPass::Forward, in, out, s, {src, wei, bias, dst});
  else
    execute(cc, ConvPass::Forward, in, out, s, {src, wei, dst});
}

void convBackwardData(ConvType in, ConvType out, const ConvShape& s, const void* diffDst,
                      const void* wei, void* diffSrc) {
  execute(lookup(ConvPass::BackwardData, in, out, s, false), ConvPass::BackwardData, in, out, s,
          {diffDst, wei, diffSrc});
}

void convBackwardWeights(ConvType in, ConvType out, const ConvShape& s, const void* src,
                         const void* diffDst, void* diffWei, void* diffBias) {
  CachedConv& cc = lookup(ConvPass::BackwardWeights, in, out, s, diffBias != nullptr);
  if (diffBias)
    execute(cc, ConvPass::BackwardWeights, in, out, s, {src, diffDst, diffWei, diffBias});
  else
    execute(cc, ConvPass::BackwardWeights, in, out, s, {src, diffDst, diffWei});
}

void convBackward(ConvType in, ConvType outData, ConvType outWeights, const ConvShape& s,
                  const void* src, const void* diffDst, const void* wei, void* diffSrc,
                  void* diffWei, void* diffBias) {
  CachedConv& bw = lookup(ConvPass::BackwardWeights, in, outWeights, s, diffBias != nullptr);
  if (!diffSrc) {
    convBackwardWeights(in, outWeights, s, src, diffDst, diffWei, diffBias);
    return;
  }
  CachedConv& bd = lookup(ConvPass::BackwardData, in, outData, s, false);
  // One arena for both: the weights pass's part stays intact while the data pass runs, so the
  // output gradient it reordered (or widened) is read from there once more.
  std::byte* arena = scratchArena(bw.arenaBytes + bd.arenaBytes);
  Prepared dy;
  try {
    dy = diffBias ? run(bw, {src, diffDst, diffWei, diffBias}, arena, nullptr, DNNL_ARG_DIFF_DST)
                  : run(bw, {src, diffDst, diffWei}, arena, nullptr, DNNL_ARG_DIFF_DST);
  } catch (const dnnl::error& err) {
    throwComputeError("convolution", describeConv(ConvPass::BackwardWeights, in, outWeights, s), err.what());
  }
  try {
    run(bd, {diffDst, wei, diffSrc}, bd.arenaBytes ? arena + bw.arenaBytes : nullptr,
        dy.data ? &dy : nullptr);
  } catch (const dnnl::error& err) {
    throwComputeError("convolution", describeConv(ConvPass::BackwardData, in, outData, s), err.what());
  }
}

std::size_t convBackwardScratchBytes(ConvType in, ConvType outData, ConvType outWeights,
                                     const ConvShape& s, bool bias, bool data) {
  return lookup(ConvPass::BackwardWeights, in, outWeights, s, bias).arenaBytes +
         (data ? lookup(ConvPass::BackwardData, in, outData, s, false).arenaBytes : 0);
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

bool convIsNative16(ConvPass pass, ConvType in, ConvType out, const ConvShape& s, bool bias) {
  return in != ConvType::F32 && !lookup(pass, in, out, s, bias).emulated;
}

}  // namespace amp::cpu
