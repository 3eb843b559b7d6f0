#include "kernels/cpu/onednn_matmul.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "oneapi/dnnl/dnnl.hpp"

namespace amp::cpu {
namespace {

using dnnl::memory;

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::data_type toDnnl(MatType t) {
  return t == MatType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
}

// A cached primitive with its memory objects; only the data handles change per call.
struct CachedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory a, b, bias, c;
  bool hasBias = false;
};

using Key = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, bool, bool, bool>;

CachedMatmul& lookup(MatType in, MatType out, const MatmulShape& s, bool hasBias) {
  // One cache and one stream per thread: runs on different threads never contend or share
  // mutable oneDNN objects.
  thread_local std::map<Key, std::unique_ptr<CachedMatmul>> cache;
  Key key{int(in), int(out), s.m, s.n, s.k, s.transA, s.transB, hasBias};
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;

  auto& eng = cpuEngine();
  const auto dtIn = toDnnl(in);
  // Strides express the transposes, so no copies are made.
  memory::desc aMd({s.m, s.k}, dtIn, s.transA ? memory::dims{1, s.m} : memory::dims{s.k, 1});
  memory::desc bMd({s.k, s.n}, dtIn, s.transB ? memory::dims{1, s.k} : memory::dims{s.n, 1});
  memory::desc cMd({s.m, s.n}, toDnnl(out), memory::dims{s.n, 1});
  memory::desc biasMd({1, s.n}, dtIn, memory::dims{s.n, 1});
  auto desc = hasBias ? dnnl::matmul::desc(aMd, bMd, biasMd, cMd) : dnnl::matmul::desc(aMd, bMd, cMd);
  auto entry = std::make_unique<CachedMatmul>();
  entry->pd = dnnl::matmul::primitive_desc(desc, eng);
  entry->prim = dnnl::matmul(entry->pd);
  entry->a = memory(aMd, eng, DNNL_MEMORY_NONE);
  entry->b = memory(bMd, eng, DNNL_MEMORY_NONE);
  entry->c = memory(cMd, eng, DNNL_MEMORY_NONE);
  if (hasBias) entry->bias = memory(biasMd, eng, DNNL_MEMORY_NONE);
  entry->hasBias = hasBias;
  auto& ref = *entry;
  cache.emplace(key, std::move(entry));
  return ref;
}

}  // namespace

void matmul(MatType in, MatType out, const MatmulShape& s, const void* a, const void* b,
            const void* bias, void* c) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) throw std::invalid_argument("matmul: empty shape");
  CachedMatmul& mm = lookup(in, out, s, bias != nullptr);
  thread_local dnnl::stream stream(cpuEngine());
  mm.a.set_data_handle(const_cast<void*>(a));
  mm.b.set_data_handle(const_cast<void*>(b));
  mm.c.set_data_handle(c);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, mm.a}, {DNNL_ARG_WEIGHTS, mm.b}, {DNNL_ARG_DST, mm.c}};
  if (bias) {
    mm.bias.set_data_handle(const_cast<void*>(bias));
    args.emplace(DNNL_ARG_BIAS, mm.bias);
  }
  mm.prim.execute(stream, args);
  stream.wait();
}

}  // namespace amp::cpu
