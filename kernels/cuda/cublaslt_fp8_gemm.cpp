// cuBLASLt is column-major (see cublaslt_gemm.cpp): the row-major c (m, n) = a (m, k) . b (n, k)^T
// is the column-major c^T (n, m) = B'^T . A' with cuBLASLt's A = our b's memory (column-major
// (k, n), ld k, op T) and its B = our a's memory (column-major (k, m), ld k, op N): exactly the
// "TN" layout its fp8 kernels require. So cuBLASLt's A scale is our b's, its B scale our a's,
// whether a scale is one float (per tensor) or a tiled block-scale array (MXFP8 / NVFP4): the
// tiles of each operand have its non-K extent as their rows (kernels/common/block_scale_tiles.h),
// which is what cuBLASLt's A (n rows of K) and B (m rows of K) expect.
#include "kernels/cuda/cublaslt_fp8_gemm.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>

namespace amp::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

cudaDataType_t elementType(MiniFormat f) {
  return f == MiniFormat::E2M1 ? CUDA_R_4F_E2M1 : f == MiniFormat::E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

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
  t += elementName(aFormat);
  t += " . (";
  t += std::to_string(n);
  t += " x ";
  t += std::to_string(k);
  t += ")^T ";
  t += elementName(bFormat);
  t += outCode == 0 ? " -> fp32" : " -> bf16";
  if (scaling == Fp8GemmScaling::Mxfp8) t += " mxfp8 (VEC32_UE8M0)";
  if (scaling == Fp8GemmScaling::Nvfp4) t += " nvfp4 (VEC16_UE4M3)";
  if (fastAccum) t += " (fast accumulation)";
  return t;
}

bool fp8GemmSupported(const Fp8GemmShape& s) {
  if (s.outCode != 0 && s.outCode != 2) return false;
  if (s.scaling == Fp8GemmScaling::Nvfp4)
    return s.aFormat == MiniFormat::E2M1 && s.bFormat == MiniFormat::E2M1 && blockGemmShapeOk(s.m, s.n, s.k);
  if (!isFp8(s.aFormat) || !isFp8(s.bFormat)) return false;
  if (s.aFormat == MiniFormat::E5M2 && s.bFormat == MiniFormat::E5M2) return false;
  if (s.scaling == Fp8GemmScaling::Mxfp8) return blockGemmShapeOk(s.m, s.n, s.k);
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
  const Key key{s.m, s.n, s.k, int(s.aFormat), int(s.bFormat), s.outCode, s.fastAccum, int(s.scaling)};
  auto it = m_plans.find(key);
  if (it != m_plans.end()) return *it->second;
  if (!fp8GemmSupported(s)) throw std::runtime_error("cuBLASLt fp8: unsupported gemm " + s.text());

  auto plan = std::make_unique<Plan>();
  check(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor", &s);
  const cublasOperation_t opA = CUBLAS_OP_T, opB = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA), "transa", &s);
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB), "transb", &s);
  if (s.scaling == Fp8GemmScaling::PerTensor) {
    const std::int8_t fast = s.fastAccum ? 1 : 0;
    check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast),
          "fast accumulation", &s);
  } else {
    // Both operands scaled per block along K; the scale pointers (set per run) then point to the
    // tiled block scales, and the modes must be on the descriptor before the heuristic looks.
    const cublasLtMatmulMatrixScale_t mode = s.scaling == Fp8GemmScaling::Mxfp8
                                                 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0
                                                 : CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
    check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode),
          "a scale mode", &s);
    check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode),
          "b scale mode", &s);
  }
  const cudaDataType_t out = s.outCode == 0 ? CUDA_R_32F : CUDA_R_16BF;
  // Sizes in elements (E2M1 included: cuBLASLt counts its packed values, not bytes).
  check(cublasLtMatrixLayoutCreate(&plan->a, elementType(s.bFormat), s.k, s.n, s.k), "layout of b", &s);
  check(cublasLtMatrixLayoutCreate(&plan->b, elementType(s.aFormat), s.k, s.m, s.k), "layout of a", &s);
  check(cublasLtMatrixLayoutCreate(&plan->c, out, s.n, s.m, s.n), "layout of c", &s);

  // The scale pointers as the heuristic will see them in use: set (run() sets the real ones per
  // call; the heuristic only reads the descriptor, never the memory), as cuBLASLt's samples set
  // them before asking. Any 256-byte aligned device address does: the workspace's.
  for (const auto attr : {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER})
    check(cublasLtMatmulDescSetAttribute(plan->op, attr, &m_workspace, sizeof m_workspace), "scale pointer", &s);

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

bool CublasLtFp8Gemm::prepare(const Fp8GemmShape& s, std::string* why) {
  try {
    planFor(s);
    return true;
  } catch (const std::runtime_error& e) {
    if (why) *why = e.what();
    return false;
  }
}

void CublasLtFp8Gemm::run(const Fp8GemmShape& s, const std::uint8_t* a, const void* scaleA, const std::uint8_t* b,
                          const void* scaleB, void* c, Stream stream, float alpha) {
  Plan& plan = planFor(s);
  // cuBLASLt's A is our b (the top of the file): its scale is b's.
  check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scaleB, sizeof scaleB),
        "a scale pointer", &s);
  check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scaleA, sizeof scaleA),
        "b scale pointer", &s);
  const float beta = 0.f;
  check(cublasLtMatmul(static_cast<cublasLtHandle_t>(m_handle), plan.op, &alpha, b, plan.a, a, plan.b, &beta, c, plan.c,
                       c, plan.c, &plan.algo, m_workspace, m_workspaceBytes, stream),
        "matmul", &s);
}

}  // namespace amp::cuda
