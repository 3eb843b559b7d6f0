#include "kernels/cpu/onednn_matmul.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "oneapi/dnnl/dnnl.hpp"

namespace amp::cpu {
namespace {

using dnnl::memory;

// A cached primitive with its memory objects; only the data handles change per call. When
// `staged`, 16-bit operands are widened into the arena at the offsets below and the primitive
// works on those fp32 copies.
struct CachedMatmul {
  dnnl::matmul prim;
  std::string impl;
  memory a, b, bias, c;
  bool hasBias = false;
  bool native16 = false;  // a 16-bit primitive (bf16 on bf16-capable oneDNN)
  bool stageIn = false, stageOut = false;
  std::size_t aOffset = 0, bOffset = 0, biasOffset = 0, cOffset = 0, arenaBytes = 0;
};

using Key = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, bool, bool, bool, bool>;

memory::data_type dnnlType(ElemType t) {
  return t == ElemType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// Creates the primitive computing in `compute` (f32 or bf16) with output type `outType`.
// Throws dnnl::error when oneDNN has no implementation.
void createPrimitive(CachedMatmul& e, const MatmulShape& s, memory::data_type compute,
                     memory::data_type outType, bool hasBias) {
  auto& eng = cpuEngine();
  // Strides express the transposes, so no copies are made.
  memory::desc aMd({s.m, s.k}, compute, s.transA ? memory::dims{1, s.m} : memory::dims{s.k, 1});
  memory::desc bMd({s.k, s.n}, compute, s.transB ? memory::dims{1, s.k} : memory::dims{s.n, 1});
  memory::desc cMd({s.m, s.n}, outType, memory::dims{s.n, 1});
  memory::desc biasMd({1, s.n}, compute, memory::dims{s.n, 1});
  auto desc = hasBias ? dnnl::matmul::desc(aMd, bMd, biasMd, cMd) : dnnl::matmul::desc(aMd, bMd, cMd);
  dnnl::matmul::primitive_desc pd(desc, eng);
  e.impl = pd.impl_info_str();
  e.prim = dnnl::matmul(pd);
  e.a = memory(aMd, eng, DNNL_MEMORY_NONE);
  e.b = memory(bMd, eng, DNNL_MEMORY_NONE);
  e.c = memory(cMd, eng, DNNL_MEMORY_NONE);
  if (hasBias) e.bias = memory(biasMd, eng, DNNL_MEMORY_NONE);
}

std::unique_ptr<CachedMatmul> create(ElemType in, ElemType out, const MatmulShape& s,
                                     bool hasBias, bool forceEmulation) {
  auto e = std::make_unique<CachedMatmul>();
  e->hasBias = hasBias;
  if (in == ElemType::BF16 && !forceEmulation) {
    try {
      createPrimitive(*e, s, memory::data_type::bf16, dnnlType(out), hasBias);
      e->native16 = true;
      return e;
    } catch (const dnnl::error& err) {
      // No bf16 matmul on this CPU (oneDNN 2.6 below AVX-512): emulate through fp32 below.
      // Any other failure (memory, arguments) is not a reason to emulate: say it.
      if (err.status != dnnl_unimplemented) throw;
    }
  }
  createPrimitive(*e, s, memory::data_type::f32, memory::data_type::f32, hasBias);
  if (in != ElemType::F32) {
    e->impl += std::string(" (") + elemTypeName(in) + " emulated: fp32 math on " +
               elemTypeName(in) + " values)";
    e->stageIn = true;
    e->stageOut = out != ElemType::F32;
    auto reserve = [&](std::int64_t elements) {
      const std::size_t at = e->arenaBytes;
      e->arenaBytes += alignScratch(static_cast<std::size_t>(elements) * 4);
      return at;
    };
    e->aOffset = reserve(s.m * s.k);
    e->bOffset = reserve(s.k * s.n);
    if (hasBias) e->biasOffset = reserve(s.n);
    if (e->stageOut) e->cOffset = reserve(s.m * s.n);
  }
  return e;
}

CachedMatmul& lookup(ElemType in, ElemType out, const MatmulShape& s, bool hasBias) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) throw std::invalid_argument("matmul: empty shape");
  if (out != in && out != ElemType::F32)
    throw std::invalid_argument("matmul: output must be fp32 or the input type");
  const bool force = forceBf16Emulation();
  // One cache per thread: runs on different threads never contend or share mutable oneDNN
  // objects.
  thread_local std::map<Key, std::unique_ptr<CachedMatmul>> cache;
  Key key{int(in), int(out), s.m, s.n, s.k, s.transA, s.transB, hasBias, force && in == ElemType::BF16};
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  try {
    it = cache.emplace(key, create(in, out, s, hasBias, force)).first;
  } catch (const dnnl::error& err) {
    throwComputeError("matmul", describeMatmul(in, out, s), err.what());
  }
  return *it->second;
}

}  // namespace

std::string describeMatmul(ElemType in, ElemType out, const MatmulShape& s) {
  auto dims = [](std::int64_t r, std::int64_t c) {
    return "(" + std::to_string(r) + "x" + std::to_string(c) + ")";
  };
  return std::string("a") + (s.transA ? "^T " + dims(s.k, s.m) : " " + dims(s.m, s.k)) + " x b" +
         (s.transB ? "^T " + dims(s.n, s.k) : " " + dims(s.k, s.n)) + " -> c " + dims(s.m, s.n) +
         ", " + elemTypeName(in) + " in, " + elemTypeName(out) + " out";
}

void matmul(ElemType in, ElemType out, const MatmulShape& s, const void* a, const void* b,
            const void* bias, void* c) {
  CachedMatmul& mm = lookup(in, out, s, bias != nullptr);
  thread_local dnnl::stream stream(cpuEngine());
  const void* aUse = a;
  const void* bUse = b;
  const void* biasUse = bias;
  void* cUse = c;
  std::byte* arena = mm.arenaBytes ? scratchArena(mm.arenaBytes) : nullptr;
  if (mm.stageIn) {
    auto* a32 = reinterpret_cast<float*>(arena + mm.aOffset);
    auto* b32 = reinterpret_cast<float*>(arena + mm.bOffset);
    widenToF32(in, a, a32, static_cast<std::size_t>(s.m * s.k));
    widenToF32(in, b, b32, static_cast<std::size_t>(s.k * s.n));
    aUse = a32;
    bUse = b32;
    if (bias) {
      auto* bias32 = reinterpret_cast<float*>(arena + mm.biasOffset);
      widenToF32(in, bias, bias32, static_cast<std::size_t>(s.n));
      biasUse = bias32;
    }
  }
  if (mm.stageOut) cUse = arena + mm.cOffset;
  mm.a.set_data_handle(const_cast<void*>(aUse));
  mm.b.set_data_handle(const_cast<void*>(bUse));
  mm.c.set_data_handle(cUse);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, mm.a}, {DNNL_ARG_WEIGHTS, mm.b}, {DNNL_ARG_DST, mm.c}};
  if (bias) {
    mm.bias.set_data_handle(const_cast<void*>(biasUse));
    args.emplace(DNNL_ARG_BIAS, mm.bias);
  }
  try {
    mm.prim.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& err) {
    throwComputeError("matmul", describeMatmul(in, out, s), err.what());
  }
  if (mm.stageOut)
    narrowFromF32(out, static_cast<const float*>(cUse), c, static_cast<std::size_t>(s.m * s.n));
}

std::size_t matmulScratchBytes(ElemType in, ElemType out, const MatmulShape& s, bool bias) {
  return lookup(in, out, s, bias).arenaBytes;
}

bool matmulIsNative16(ElemType in, ElemType out, const MatmulShape& s, bool bias) {
  return lookup(in, out, s, bias).native16;
}

std::string matmulImplementation(ElemType in, ElemType out, const MatmulShape& s, bool bias) {
  return lookup(in, out, s, bias).impl;
}

}  // namespace amp::cpu
