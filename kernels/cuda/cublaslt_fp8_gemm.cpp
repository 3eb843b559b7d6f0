// cuBLASLt is column-major (see cublaslt_gemm.cpp): the row-major c (m, n) = a (m, k) . b (n, k)^T
// is the column-major c^T (n, m) = B'^T . A' with cuBLASLt's A = our b's memory (column-major
// (k, n), ld k, op T) and its B = our a's memory (column-major (k, m), ld k, op N): exactly the
// "TN" layout its fp8 kernels require. So cuBLASLt's A scale is our b's, its B scale our a's.
#include "kernels/cuda/cublaslt_fp8_gemm.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>

namespace amp::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

cudaDataType_t fp8Type(MiniFormat f) { return f == MiniFormat::E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3; }
const char* formatName(MiniFormat f) { return f == MiniFormat::E5M2 ? "e5m2" : f == MiniFormat::E4M3 ? "e4m3" : "other"; }

void check(cublasStatus_t status, const char* what, const Fp8GemmShape* shape = nullptr) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = std::string("cuBLASLt fp8 ") + what;
  if (shape) msg += " for gemm " + shape->text();
  msg += ": " + std::string(cublasLtGetStatusString(status));
  throw std::runtime_error(msg);
}

bool isFp8(MiniFormat f) { return f == MiniFormat::E4M3 || f == MiniFormat::E5M2; }

}  // namespace

std::string Fp8GemmShape::text() const {
  // Appended piece by piece (GCC 12's -Wrestrict misfires on long chains of operator+).
  std::string t = "(";
  t += std::to_string(m);
  t += " x ";
  t += std::to_string(k);
  t += ") ";
  t += formatName(aFormat);
  t += " . (";
  t += std::to_string(n);
  t += " x ";
  t += std::to_string(k);
  t += ")^T ";
  t += formatName(bFormat);
  t += outCode == 0 ? " -> fp32" : " -> bf16";
  if (fastAccum) t += " (fast accumulation)";
  return t;
}

bool fp8GemmSupported(const Fp8GemmShape& s) {
  if (!isFp8(s.aFormat) || !isFp8(s.bFormat)) return false;
  if (s.aFormat == MiniFormat::E5M2 && s.bFormat == MiniFormat::E5M2) return false;
  if (s.outCode != 0 && s.outCode != 2) return false;
  return s.m > 0 && s.n > 0 && s.k > 0 && s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0;
}

struct CublasLtFp8Gemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

CublasLtFp8Gemm::CublasLtFp8Gemm() {
  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "create");
  m_handle = handle;
  if (cudaMalloc(&m_workspace, kWorkspaceBytes) != cudaSuccess) {
    cudaGetLastError();
    cublasLtDestroy(handle);
    throw std::runtime_error("cuBLASLt fp8: could not allocate its " + std::to_string(kWorkspaceBytes >> 20) +
                             " MiB workspace");
  }
  m_workspaceBytes = kWorkspaceBytes;
}

CublasLtFp8Gemm::~CublasLtFp8Gemm() {
  m_plans.clear();
  if (m_workspace) cudaFree(m_workspace);
  if (m_handle) cublasLtDestroy(static_cast<cublasLtHandle_t>(m_handle));
}

CublasLtFp8Gemm::Plan& CublasLtFp8Gemm::planFor(const Fp8GemmShape& s) {
  const Key key{s.m, s.n, s.k, int(s.aFormat), int(s.bFormat), s.outCode, s.fastAccum};
  auto it = m_plans.find(key);
  if (it != m_plans.end()) return *it->second;
  if (!fp8GemmSupported(s)) throw std::runtime_error("cuBLASLt fp8: unsupported gemm " + s.text());

  auto plan = std::make_unique<Plan>();
  check(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor", &s);
  const cublasOperation_t opA = CUBLAS_OP_T, opB = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA), "transa", &s);
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB), "transb", &s);
  const std::int8_t fast = s.fastAccum ? 1 : 0;
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "fast accumulation",
        &s);
  const cudaDataType_t out = s.outCode == 0 ? CUDA_R_32F : CUDA_R_16BF;
  check(cublasLtMatrixLayoutCreate(&plan->a, fp8Type(s.bFormat), s.k, s.n, s.k), "layout of b", &s);
  check(cublasLtMatrixLayoutCreate(&plan->b, fp8Type(s.aFormat), s.k, s.m, s.k), "layout of a", &s);
  check(cublasLtMatrixLayoutCreate(&plan->c, out, s.n, s.m, s.n), "layout of c", &s);

  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference", &s);
  cublasStatus_t prefSet = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                &m_workspaceBytes, sizeof m_workspaceBytes);
  // As the 16-bit GEMMs (cublaslt_gemm.cpp): a bf16 output rounded once, split-K partial sums
  // kept in fp32.
  if (prefSet == CUBLAS_STATUS_SUCCESS && s.outCode != 0) {
    const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    prefSet = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask);
  }
  if (prefSet != CUBLAS_STATUS_SUCCESS) {
    cublasLtMatmulPreferenceDestroy(pref);
    check(prefSet, "workspace preference", &s);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(m_handle), plan->op, plan->a,
                                                           plan->b, plan->c, plan->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(st, "heuristic", &s);
  if (found == 0) throw std::runtime_error("cuBLASLt has no fp8 algorithm for gemm " + s.text());
  plan->algo = result.algo;
  return *m_plans.emplace(key, std::move(plan)).first->second;
}

void CublasLtFp8Gemm::run(const Fp8GemmShape& s, const std::uint8_t* a, const float* invScaleA, const std::uint8_t* b,
                          const float* invScaleB, void* c, Stream stream) {
  Plan& plan = planFor(s);
  // cuBLASLt's A is our b (the top of the file): its scale is b's.
  check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &invScaleB, sizeof invScaleB),
        "a scale pointer", &s);
  check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &invScaleA, sizeof invScaleA),
        "b scale pointer", &s);
  const float alpha = 1.f, beta = 0.f;
  check(cublasLtMatmul(static_cast<cublasLtHandle_t>(m_handle), plan.op, &alpha, b, plan.a, a, plan.b, &beta, c, plan.c,
                       c, plan.c, &plan.algo, m_workspace, m_workspaceBytes, stream),
        "matmul", &s);
}

}  // namespace amp::cuda
