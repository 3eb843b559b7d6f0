// Max pooling and batch norm on the CUDA backend (our kernels, issue 11) against the CPU backend.
// Pooling must agree bit for bit: values, argmax and the summed gradients of overlapping
// windows, with ties, NaNs and infinities planted. Batch norm sums in another order than the
// CPU (double per block, then blocks in order; the CPU adds rows in fp32 lanes), so both
// backends are checked against a double reference from the same stored inputs, within bounds
// derived below. Every op must hand its workspace back. Skips without a GPU.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

Pool2dGeometry pool(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                    std::int64_t kernel, std::int64_t stride) {
  Pool2dGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.kernel = kernel, g.stride = stride;
  return g;
}

std::int64_t workspaceBytes(Backend& be) {
  return be.memory().snapshot().current[static_cast<int>(MemCategory::Workspace)];
}

// What a call throws as std::invalid_argument ("" when it does not).
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("another exception: ") + e.what();
  }
  return "";
}

// The same call on both backends (onCpu picks each Pair's tensor) is refused with the CPU's
// message.
void expectSameRefusal(Backend& cpu, Backend& cuda, const std::function<void(Backend&, bool)>& call,
                       const std::string& what) {
  const std::string onCpu = refusal([&] { call(cpu, true); });
  const std::string onGpu = refusal([&] { call(cuda, false); });
  EXPECT_FALSE(onCpu.empty()) << what << ": the CPU accepted it";
  EXPECT_EQ(onGpu, onCpu) << what;
}

template <class PairT>
Tensor& on(bool onCpu, PairT& p) {
  return onCpu ? p.c : p.g;
}

// Pooling input on a coarse grid (many tied maxima, +0 beside -0), with infinities, NaN pairs
// (a positive NaN, then a negative one: the later must win its window) and the first plane's
// first `kernel` rows all -inf (whole windows of -inf: the window's first element wins).
std::vector<float> poolInput(const Pool2dGeometry& g, std::uint32_t seed) {
  const auto n = static_cast<std::size_t>(g.n * g.c * g.h * g.w);
  std::vector<float> v = finiteValues(n, seed, 1.f);
  for (float& x : v) x = std::round(x * 2.f) / 2.f;
  std::mt19937 rng(seed);
  for (std::size_t i = 0; i < n / 40 + 1; ++i) {
    v[rng() % n] = kInf;
    v[rng() % n] = -kInf;
    const std::size_t at = rng() % (n - 1);
    v[at] = kNaN;
    v[at + 1] = -kNaN;
  }
  std::fill(v.begin(), v.begin() + g.kernel * g.w, -kInf);
  return v;
}

}  // namespace

// ---- max pooling ---------------------------------------------------------------------------

TEST_F(CpuAndCuda, MaxPoolForwardAndBackwardAreBitExact) {
  // 2x2/2 (the CNN's, even and odd sizes), overlapping 3x3/2 and 3x3/1, 3x3/3, gaps between
  // windows (2x2/3), 1x1, and one of the CNN's full size (many blocks).
  for (const Pool2dGeometry& g :
       {pool(2, 3, 8, 8, 2, 2), pool(3, 2, 7, 9, 2, 2), pool(2, 3, 9, 11, 3, 2),
        pool(2, 2, 7, 6, 3, 1), pool(1, 2, 9, 9, 3, 3), pool(2, 2, 10, 11, 2, 3),
        pool(1, 2, 4, 5, 1, 1), pool(16, 32, 28, 28, 2, 2)}) {
    const Shape in{g.n, g.c, g.h, g.w}, out{g.n, g.c, g.outH(), g.outW()};
    const std::vector<float> xv = poolInput(g, 11);
    std::vector<float> dyv = finiteValues(static_cast<std::size_t>(shapeNumel(out)), 12, 3.f);
    for (std::size_t i = 0; i < dyv.size(); i += 11) dyv[i] = -0.f;  // 0.f + -0.f is +0
    for (DType d : kFloats)
      for (DType od : {d, DType::F32}) {
        if (od != d && d == DType::F32) continue;
        const std::string what = "max_pool k" + std::to_string(g.kernel) + "/s" +
                                 std::to_string(g.stride) + " " + std::to_string(g.h) + "x" +
                                 std::to_string(g.w) + " " + name(d) + " -> " + name(od);
        Pair x = both(xv, in, d), y = emptyBoth(out, od), idx = emptyBoth(out, DType::I32);
        const std::int64_t before = workspaceBytes(*cuda);
        cpu->maxPool2dForward(x.c, y.c, idx.c, g);
        cuda->maxPool2dForward(x.g, y.g, idx.g, g);
        EXPECT_EQ(workspaceBytes(*cuda), before) << what;
        expectSameBits(y, what + " values");
        expectSameBits(idx, what + " argmax");

        Pair dy = both(dyv, out, od), dx = emptyBoth(in, d);
        cpu->fill(dx.c, kNaN);  // every element must be written, covered by a window or not
        cuda->fill(dx.g, kNaN);
        const std::int64_t beforeBackward = workspaceBytes(*cuda);
        cpu->maxPool2dBackward(dy.c, idx.c, dx.c, g);
        cuda->maxPool2dBackward(dy.g, idx.g, dx.g, g);
        EXPECT_EQ(workspaceBytes(*cuda), beforeBackward) << what;
        expectSameBits(dx, what + " backward");
      }
  }
}

TEST_F(CpuAndCuda, MaxPoolRefusesWhatTheCpuRefuses) {
  const Pool2dGeometry g = pool(2, 3, 6, 6, 2, 2);
  Pair x = both(finiteValues(216, 13), {2, 3, 6, 6}, DType::F32);
  Pair y = emptyBoth({2, 3, 3, 3}, DType::F32), idx = emptyBoth({2, 3, 3, 3}, DType::I32);
  Pair badY = emptyBoth({2, 3, 3, 2}, DType::F32), floatIdx = emptyBoth({2, 3, 3, 3}, DType::F32);
  Pair badDx = emptyBoth({2, 3, 6, 5}, DType::F32);
  Pool2dGeometry zeroKernel = g;
  zeroKernel.kernel = 0;
  expectSameRefusal(*cpu, *cuda, [&](Backend& be, bool c) {
    be.maxPool2dForward(on(c, x), on(c, badY), on(c, idx), g);
  }, "output of the wrong size");
  expectSameRefusal(*cpu, *cuda, [&](Backend& be, bool c) {
    be.maxPool2dForward(on(c, x), on(c, y), on(c, floatIdx), g);
  }, "argmax not int32");
  expectSameRefusal(*cpu, *cuda, [&](Backend& be, bool c) {
    be.maxPool2dForward(on(c, x), on(c, y), on(c, idx), zeroKernel);
  }, "kernel 0");
  cpu->maxPool2dForward(x.c, y.c, idx.c, g);
  cuda->maxPool2dForward(x.g, y.g, idx.g, g);
  expectSameRefusal(*cpu, *cuda, [&](Backend& be, bool c) {
    be.maxPool2dBackward(on(c, y), on(c, idx), on(c, badDx), g);
  }, "input gradient of the wrong size");
  // A window larger than the input ((1 - 2) / 2 + 1 would be one output row whose window reads
  // past the plane): both refuse it with the one shared check and message.
  expectSameRefusal(*cpu, *cuda, [&](Backend& be, bool c) {
    be.maxPool2dForward(on(c, x), on(c, y), on(c, idx), pool(2, 3, 1, 36, 2, 2));
  }, "window larger than the input");
  EXPECT_EQ(refusal([&] { cuda->maxPool2dForward(x.g, y.g, idx.g, pool(2, 3, 1, 36, 2, 2)); }),
            "max_pool2d: invalid geometry (kernel 2, stride 2, padding 0 on 1x36)");
}

// ---- batch norm: the double reference and its bounds ---------------------------------------
namespace {

// u = 2^-24 (fp32 rounding). A channel's m = n * hw values are summed by the CPU in fp32 within
// a row of hw values (8 lanes) and in double across rows, by the GPU in double throughout: both
// within (hw + 2) u sum|terms| + m 2^-53 sum|terms| of the exact sum. Terms that are themselves
// fp32 products (x - mean)^2 and dy * xhat add 3 u |term| each. The per-channel figures follow
// to first order (below); each bound is then doubled for the second-order terms, and storing
// into a 16-bit dtype adds half its ulp (fp16 2^-11, bf16 2^-8 relative, fp16 2^-25 absolute).

constexpr double kU = 0x1p-24, kU64 = 0x1p-53;

double storeBound(DType d, double magnitude) {
  if (d == DType::F16) return 0x1p-11 * magnitude + 0x1p-25;
  if (d == DType::BF16) return 0x1p-8 * magnitude;
  return 0;
}

struct Checked {  // reference values and the allowed |backend - reference|
  std::vector<double> ref, bound;
  void add(double value, double error, DType stored) {
    ref.push_back(value);
    bound.push_back(2 * error + storeBound(stored, std::fabs(value) + 2 * error));
  }
};

void expectWithin(Backend& be, const Tensor& t, const Checked& want, const std::string& what) {
  const std::vector<float> got = be.toHostFloat(t);
  ASSERT_EQ(got.size(), want.ref.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size() && reported < 5; ++i)
    if (!(std::fabs(double(got[i]) - want.ref[i]) <= want.bound[i])) {
      ADD_FAILURE() << be.name() << " " << what << " [" << i << "]: " << got[i]
                    << " vs reference " << want.ref[i] << " (bound " << want.bound[i] << ")";
      ++reported;
    }
}

struct BnShape {
  std::int64_t n, c, hw;
  explicit BnShape(const Shape& s) : n(s[0]), c(s[1]), hw(shapeNumel(s) / (s[0] * s[1])) {}
  std::size_t at(std::int64_t i, std::int64_t ch, std::int64_t j) const {
    return static_cast<std::size_t>((i * c + ch) * hw + j);
  }
  double m() const { return double(n * hw); }
  double sumError(double absSum, int extraUlps = 0) const {
    return ((double(hw) + 2 + extraUlps) * kU + m() * kU64) * absSum;
  }
};

// Rank 2 (hw 1: strided reads; 3000 values: two blocks per channel on the GPU) and rank 4 (3
// and 13 blocks per channel, the last one partial).
const Shape kBnShapes[] = {{64, 5}, {3000, 7}, {16, 3, 17, 19}, {32, 4, 28, 28}};

}  // namespace

TEST_F(CpuAndCuda, BatchNormTrainingForwardMatchesADoubleReference) {
  const float momentum = 0.1f, eps = 1e-5f;
  const double mom = momentum;
  for (const Shape& s : kBnShapes)
    for (DType xd : kFloats)
      for (DType pd : {DType::F32, DType::F16}) {
        const BnShape d(s);
        const std::string what = shapeString(s) + " x " + name(xd) + ", per-channel " + name(pd);
        std::vector<float> xv = finiteValues(static_cast<std::size_t>(shapeNumel(s)), 21, 2.f);
        for (float& v : xv) v += 3.f;  // a mean well away from 0: the centring matters
        Pair x = both(xv, s, xd), y = emptyBoth(s, xd);
        Pair gamma = both(finiteValues(d.c, 22, 0.5f), {d.c}, pd);
        Pair beta = both(finiteValues(d.c, 23), {d.c}, pd);
        std::vector<float> rv0 = finiteValues(d.c, 25, 0.5f);
        for (float& v : rv0) v = std::fabs(v) + 0.5f;
        Pair rm = both(finiteValues(d.c, 24), {d.c}, pd), rv = both(rv0, {d.c}, pd);
        Pair sm = emptyBoth({d.c}, pd), si = emptyBoth({d.c}, pd);
        const auto X = cpu->toHostFloat(x.c), G = cpu->toHostFloat(gamma.c),
                   B = cpu->toHostFloat(beta.c), RM = cpu->toHostFloat(rm.c),
                   RV = cpu->toHostFloat(rv.c);

        const std::int64_t before = workspaceBytes(*cuda);
        cpu->batchNormForwardTrain(x.c, gamma.c, beta.c, rm.c, rv.c, momentum, eps, y.c, sm.c,
                                   si.c);
        cuda->batchNormForwardTrain(x.g, gamma.g, beta.g, rm.g, rv.g, momentum, eps, y.g, sm.g,
                                    si.g);
        EXPECT_EQ(workspaceBytes(*cuda), before) << what;

        Checked mean, invStd, runMean, runVar, out;
        out.ref.resize(X.size());
        out.bound.resize(X.size());
        const double m = d.m();
        for (std::int64_t ch = 0; ch < d.c; ++ch) {
          double sum = 0, absSum = 0, sq = 0;
          for (std::int64_t i = 0; i < d.n; ++i)
            for (std::int64_t j = 0; j < d.hw; ++j) {
              sum += X[d.at(i, ch, j)];
              absSum += std::fabs(X[d.at(i, ch, j)]);
            }
          const double mu = sum / m;
          for (std::int64_t i = 0; i < d.n; ++i)
            for (std::int64_t j = 0; j < d.hw; ++j)
              sq += (X[d.at(i, ch, j)] - mu) * (X[d.at(i, ch, j)] - mu);
          const double inv = 1 / std::sqrt(sq / m + eps);
          // The sum's error moves the double mean; the fp32 mean (the deviations' centre) adds
          // its rounding; deviations from a centre off by e add m e^2 to the squares' sum.
          const double sumErr = d.sumError(absSum), meanErr = sumErr / m + kU * std::fabs(mu);
          const double sqErr = d.sumError(sq + m * meanErr * meanErr, 4) + m * meanErr * meanErr;
          const double invRel = 0.5 * (sqErr / m) / (sq / m + eps) + 4 * kU64;
          mean.add(mu, meanErr, pd);
          invStd.add(inv, inv * (invRel + kU), pd);
          const double keepMean = (1 - mom) * RM[ch], keepVar = (1 - mom) * RV[ch];
          runMean.add(keepMean + mom * mu,
                      mom * sumErr / m + kU * (std::fabs(keepMean) + std::fabs(mom * mu)), pd);
          runVar.add(keepVar + mom * sq / (m - 1),
                     mom * sqErr / (m - 1) + kU * (std::fabs(keepVar) + mom * sq / (m - 1)), pd);
          // y = x * scale + shift with scale = fp32(inv g), shift = fp32(b - mu inv g).
          const double scale = inv * G[ch], shift = B[ch] - mu * inv * G[ch];
          const double scaleErr = std::fabs(scale) * (invRel + kU);
          const double shiftErr = std::fabs(G[ch]) * inv * (std::fabs(mu) * invRel + sumErr / m) +
                                  kU * (std::fabs(B[ch]) + std::fabs(mu * inv * G[ch]));
          for (std::int64_t i = 0; i < d.n; ++i)
            for (std::int64_t j = 0; j < d.hw; ++j) {
              const std::size_t at = d.at(i, ch, j);
              const double xs = std::fabs(X[at] * scale), ref = X[at] * scale + shift;
              const double err = std::fabs(X[at]) * scaleErr + shiftErr + 2 * kU * xs +
                                 kU * std::fabs(shift);
              out.ref[at] = ref;
              out.bound[at] = 2 * err + storeBound(xd, std::fabs(ref) + 2 * err);
            }
        }
        for (Backend* be : {cpu.get(), cuda.get()}) {
          const bool onCpu = be == cpu.get();
          expectWithin(*be, onCpu ? y.c : y.g, out, what + " y");
          expectWithin(*be, onCpu ? sm.c : sm.g, mean, what + " saved mean");
          expectWithin(*be, onCpu ? si.c : si.g, invStd, what + " saved invstd");
          expectWithin(*be, onCpu ? rm.c : rm.g, runMean, what + " running mean");
          expectWithin(*be, onCpu ? rv.c : rv.g, runVar, what + " running var");
        }
      }
}

TEST_F(CpuAndCuda, BatchNormEvalForwardMatchesADoubleReference) {
  const float eps = 1e-5f;
  for (const Shape& s : kBnShapes)
    for (DType xd : kFloats)
      for (DType pd : {DType::F32, DType::F16}) {
        const BnShape d(s);
        const std::string what = shapeString(s) + " x " + name(xd) + ", per-channel " + name(pd);
        Pair x = both(finiteValues(static_cast<std::size_t>(shapeNumel(s)), 31, 2.f), s, xd);
        Pair y = emptyBoth(s, xd);
        std::vector<float> rv0 = finiteValues(d.c, 35, 1.f);
        for (float& v : rv0) v = std::fabs(v) + 0.25f;
        Pair gamma = both(finiteValues(d.c, 32, 0.5f), {d.c}, pd),
             beta = both(finiteValues(d.c, 33), {d.c}, pd),
             rm = both(finiteValues(d.c, 34), {d.c}, pd), rv = both(rv0, {d.c}, pd);
        const std::int64_t before = workspaceBytes(*cuda);
        cpu->batchNormForwardEval(x.c, gamma.c, beta.c, rm.c, rv.c, eps, y.c);
        cuda->batchNormForwardEval(x.g, gamma.g, beta.g, rm.g, rv.g, eps, y.g);
        EXPECT_EQ(workspaceBytes(*cuda), before) << what;
        const auto X = cpu->toHostFloat(x.c), G = cpu->toHostFloat(gamma.c),
                   B = cpu->toHostFloat(beta.c), RM = cpu->toHostFloat(rm.c),
                   RV = cpu->toHostFloat(rv.c);
        // scale = fp32(g / sqrt(rv + eps)) and shift = fp32(b - rm scale) round once each (the
        // double inverse square root adds 2^-50); x * scale and the sum once each.
        Checked out;
        out.ref.resize(X.size());
        out.bound.resize(X.size());
        for (std::int64_t ch = 0; ch < d.c; ++ch) {
          const double scale = G[ch] / std::sqrt(double(RV[ch]) + eps),
                       shift = B[ch] - RM[ch] * scale;
          for (std::int64_t i = 0; i < d.n; ++i)
            for (std::int64_t j = 0; j < d.hw; ++j) {
              const std::size_t at = d.at(i, ch, j);
              const double xs = std::fabs(X[at] * scale), ref = X[at] * scale + shift;
              const double err =
                  xs * (3 * kU + 4 * kU64) +
                  kU * (std::fabs(B[ch]) + std::fabs(RM[ch] * scale) + std::fabs(shift));
              out.ref[at] = ref;
              out.bound[at] = 2 * err + storeBound(xd, std::fabs(ref) + 2 * err);
            }
        }
        expectWithin(*cpu, y.c, out, what + " eval y");
        expectWithin(*cuda, y.g, out, what + " eval y");
      }
}

TEST_F(CpuAndCuda, BatchNormBackwardMatchesADoubleReferenceAndIsDeterministic) {
  for (const Shape& s : kBnShapes)
    for (DType xd : kFloats)
      for (DType pd : {DType::F32, DType::F16}) {
        const BnShape d(s);
        const std::string what = shapeString(s) + " x " + name(xd) + ", per-channel " + name(pd);
        const auto n = static_cast<std::size_t>(shapeNumel(s));
        std::vector<float> xv = finiteValues(n, 41, 1.f);
        for (float& v : xv) v = 2.f * v - 1.f;
        Pair x = both(xv, s, xd), dy = both(finiteValues(n, 42, 2.f), s, xd);
        // Saved statistics near the data's own (xhat of order 1), as a forward would leave them.
        std::vector<float> mu0(static_cast<std::size_t>(d.c)), is0(static_cast<std::size_t>(d.c));
        for (std::size_t ch = 0; ch < mu0.size(); ++ch) {
          mu0[ch] = -1.f + 0.01f * float(ch);
          is0[ch] = 0.5f + 0.1f * float(ch);
        }
        Pair gamma = both(finiteValues(d.c, 43, 0.5f), {d.c}, pd), sm = both(mu0, {d.c}, pd),
             si = both(is0, {d.c}, pd);
        Pair dx = emptyBoth(s, xd), dg = emptyBoth({d.c}, pd), db = emptyBoth({d.c}, pd);
        const std::int64_t before = workspaceBytes(*cuda);
        cpu->batchNormBackward(dy.c, x.c, gamma.c, sm.c, si.c, dx.c, dg.c, db.c);
        cuda->batchNormBackward(dy.g, x.g, gamma.g, sm.g, si.g, dx.g, dg.g, db.g);
        EXPECT_EQ(workspaceBytes(*cuda), before) << what;

        const auto X = cpu->toHostFloat(x.c), DY = cpu->toHostFloat(dy.c),
                   G = cpu->toHostFloat(gamma.c), MU = cpu->toHostFloat(sm.c),
                   IS = cpu->toHostFloat(si.c);
        const double m = d.m();
        Checked dgamma, dbeta, dxRef;
        dxRef.ref.resize(X.size());
        dxRef.bound.resize(X.size());
        for (std::int64_t ch = 0; ch < d.c; ++ch) {
          double sumDy = 0, absDy = 0, sumDyXhat = 0, absDyXhat = 0;
          for (std::int64_t i = 0; i < d.n; ++i)
            for (std::int64_t j = 0; j < d.hw; ++j) {
              const std::size_t at = d.at(i, ch, j);
              const double xhat = (double(X[at]) - MU[ch]) * IS[ch];
              sumDy += DY[at];
              absDy += std::fabs(DY[at]);
              sumDyXhat += DY[at] * xhat;
              absDyXhat += std::fabs(DY[at] * xhat);
            }
          // Each dy * xhat term is three fp32 roundings: (x - mu), * invstd, * dy.
          const double errDy = d.sumError(absDy), errDyXhat = d.sumError(absDyXhat, 3);
          dbeta.add(sumDy, errDy + kU * std::fabs(sumDy), pd);
          dgamma.add(sumDyXhat, errDyXhat + kU * std::fabs(sumDyXhat), pd);
          // dx = k ((dy - meanDy) - xhat meanDyXhat), k = fp32(g invstd): the means carry
          // their sums' errors plus a rounding; xhat two roundings; the rest one each.
          const double meanDy = sumDy / m, meanDyXhat = sumDyXhat / m, k = double(G[ch]) * IS[ch];
          const double e1 = errDy / m + kU * std::fabs(meanDy),
                       e2 = errDyXhat / m + kU * std::fabs(meanDyXhat);
          for (std::int64_t i = 0; i < d.n; ++i)
            for (std::int64_t j = 0; j < d.hw; ++j) {
              const std::size_t at = d.at(i, ch, j);
              const double xhat = (double(X[at]) - MU[ch]) * IS[ch];
              const double ref = k * (DY[at] - meanDy - xhat * meanDyXhat);
              const double mag =
                  std::fabs(DY[at]) + std::fabs(meanDy) + std::fabs(xhat * meanDyXhat);
              const double err = std::fabs(k) * (e1 + std::fabs(xhat) * e2 + 7 * kU * mag);
              dxRef.ref[at] = ref;
              dxRef.bound[at] = 2 * err + storeBound(xd, std::fabs(ref) + 2 * err);
            }
        }
        for (Backend* be : {cpu.get(), cuda.get()}) {
          const bool onCpu = be == cpu.get();
          expectWithin(*be, onCpu ? dx.c : dx.g, dxRef, what + " dx");
          expectWithin(*be, onCpu ? dg.c : dg.g, dgamma, what + " dgamma");
          expectWithin(*be, onCpu ? db.c : db.g, dbeta, what + " dbeta");
        }
        // The sums' order is fixed by the shape: a second run gives the same bits.
        Tensor dx2 = cuda->empty(s, xd, MemCategory::Workspace),
               dg2 = cuda->empty({d.c}, pd, MemCategory::Workspace),
               db2 = cuda->empty({d.c}, pd, MemCategory::Workspace);
        cuda->batchNormBackward(dy.g, x.g, gamma.g, sm.g, si.g, dx2, dg2, db2);
        EXPECT_EQ(cuda->toHostBytes(dx2), cuda->toHostBytes(dx.g)) << what << " rerun dx";
        EXPECT_EQ(cuda->toHostBytes(dg2), cuda->toHostBytes(dg.g)) << what << " rerun dgamma";
        EXPECT_EQ(cuda->toHostBytes(db2), cuda->toHostBytes(db.g)) << what << " rerun dbeta";
      }
}

TEST_F(CpuAndCuda, BatchNormRefusesWhatTheCpuRefuses) {
  const float eps = 1e-5f;
  const auto bothRefuse = [&](const std::function<void(Backend&, bool)>& call,
                              const std::string& what) {
    expectSameRefusal(*cpu, *cuda, call, what);
  };
  Pair p3 = both({1, 1, 1}, {3}, DType::F32), p4 = both({1, 1, 1, 1}, {4}, DType::F32);
  Pair rm = both({0.5f, 0.5f, 0.5f}, {3}, DType::F32), rv = both({2, 2, 2}, {3}, DType::F32);
  Pair sm = emptyBoth({3}, DType::F32), si = emptyBoth({3}, DType::F32);
  // One value per channel cannot be normalised in training (rank 2 and rank 4).
  for (const Shape& s : {Shape{1, 3}, Shape{1, 3, 1, 1}}) {
    Pair x = both({1, 2, 3}, s, DType::F32), y = emptyBoth(s, DType::F32);
    bothRefuse([&](Backend& be, bool c) {
      be.batchNormForwardTrain(on(c, x), on(c, p3), on(c, p3), on(c, rm), on(c, rv), 0.1f, eps,
                               on(c, y), on(c, sm), on(c, si));
    }, "one value per channel " + shapeString(s));
  }
  Pair x = both(finiteValues(24, 51), {4, 3, 2}, DType::F32), y = emptyBoth({4, 3, 2}, DType::F32);
  Pair y16 = emptyBoth({4, 3, 2}, DType::F16), x1 = both({1, 2, 3}, {3}, DType::F32);
  bothRefuse([&](Backend& be, bool c) {
    be.batchNormForwardTrain(on(c, x), on(c, p4), on(c, p3), on(c, rm), on(c, rv), 0.1f, eps,
                             on(c, y), on(c, sm), on(c, si));
  }, "gamma of 4 for 3 channels");
  bothRefuse([&](Backend& be, bool c) {
    be.batchNormForwardTrain(on(c, x), on(c, p3), on(c, p3), on(c, rm), on(c, rv), 0.1f, eps,
                             on(c, y16), on(c, sm), on(c, si));
  }, "y in another dtype");
  bothRefuse([&](Backend& be, bool c) {
    be.batchNormForwardEval(on(c, x1), on(c, p3), on(c, p3), on(c, rm), on(c, rv), eps, on(c, y));
  }, "rank-1 x");
  bothRefuse([&](Backend& be, bool c) {
    be.batchNormForwardEval(on(c, x), on(c, p3), on(c, p3), on(c, rm), on(c, p4), eps, on(c, y));
  }, "running var of 4 for 3 channels");
  Pair dg = emptyBoth({3}, DType::F32), db = emptyBoth({3}, DType::F32);
  Pair dySmall = both(finiteValues(12, 52), {2, 3, 2}, DType::F32);
  bothRefuse([&](Backend& be, bool c) {
    be.batchNormBackward(on(c, dySmall), on(c, x), on(c, p3), on(c, p3), on(c, p3), on(c, y),
                         on(c, dg), on(c, db));
  }, "dy smaller than x");
  bothRefuse([&](Backend& be, bool c) {
    be.batchNormBackward(on(c, x), on(c, x), on(c, p3), on(c, p3), on(c, p3), on(c, y16),
                         on(c, dg), on(c, db));
  }, "dx in another dtype than dy");
  // A refused call leaves the running statistics as they were (all checks come first).
  EXPECT_EQ(cuda->toHostFloat(rm.g), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(cuda->toHostFloat(rv.g), (std::vector<float>{2.f, 2.f, 2.f}));
}
