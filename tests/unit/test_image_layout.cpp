// The image index math shared by the CPU and the CUDA kernels (kernels/common/image_layout.h)
// against the definitions written out by hand, in 64-bit and in the 32-bit arithmetic the
// kernels use; and the CPU transpose (kernels/cpu/image_transpose) against that math, for every
// element size, shapes whose sides are not multiples of its tiles, and the round trip.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/image_layout.h"
#include "kernels/cpu/image_transpose.h"

namespace amp {
namespace {

struct Dims {
  std::int64_t n, c, h, w;
};
constexpr Dims kShapes[] = {{2, 3, 4, 5}, {1, 1, 7, 3}, {3, 8, 1, 1}, {2, 5, 3, 1}, {1, 33, 6, 7}};

std::int64_t nchw(const Dims& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return ((n * d.c + c) * d.h + h) * d.w + w;
}
std::int64_t nhwc(const Dims& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return ((n * d.h + h) * d.w + w) * d.c + c;
}

TEST(ImageLayout, OffsetsFollowTheDefinitions) {
  for (const Dims& d : kShapes) {
    const std::int64_t hw = d.h * d.w;
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t c = 0; c < d.c; ++c)
        for (std::int64_t h = 0; h < d.h; ++h)
          for (std::int64_t w = 0; w < d.w; ++w) {
            const std::int64_t plane = n * d.c + c, pos = h * d.w + w;
            for (bool cl : {false, true}) {
              const std::int64_t at = cl ? nhwc(d, n, c, h, w) : nchw(d, n, c, h, w);
              ASSERT_EQ(planeOffset(cl, plane, pos, d.c, hw), at);
              ASSERT_EQ(imageOffset(cl, n, c, pos, d.c, hw), at);
              ASSERT_EQ(channelAt(cl, at, d.c, hw), c);
              std::int64_t p = -1, q = -1;
              planeAndPositionAt(cl, at, d.c, hw, p, q);
              ASSERT_EQ(p, plane);
              ASSERT_EQ(q, pos);
              // The 32-bit forms the kernels use agree wherever the tensor fits.
              ASSERT_EQ(planeOffset<std::uint32_t>(cl, std::uint32_t(plane), std::uint32_t(pos),
                                                   std::uint32_t(d.c), std::uint32_t(hw)),
                        std::uint32_t(at));
              ASSERT_EQ(channelAt<std::uint32_t>(cl, std::uint32_t(at), std::uint32_t(d.c),
                                                 std::uint32_t(hw)),
                        std::uint32_t(c));
            }
            // The transpose's source offset: destination NHWC reads NCHW, and the reverse.
            ASSERT_EQ(transposedOffset(true, nhwc(d, n, c, h, w), d.c, hw), nchw(d, n, c, h, w));
            ASSERT_EQ(transposedOffset(false, nchw(d, n, c, h, w), d.c, hw), nhwc(d, n, c, h, w));
          }
  }
}

TEST(ImageLayout, PoolOutputsDecomposeInEitherLayout) {
  const Dims out{2, 3, 4, 5};
  for (std::int64_t n = 0; n < out.n; ++n)
    for (std::int64_t c = 0; c < out.c; ++c)
      for (std::int64_t h = 0; h < out.h; ++h)
        for (std::int64_t w = 0; w < out.w; ++w)
          for (bool cl : {false, true}) {
            const std::int64_t o = cl ? nhwc(out, n, c, h, w) : nchw(out, n, c, h, w);
            const PoolOutput<std::int64_t> p = poolOutputAt(cl, o, out.c, out.h, out.w);
            ASSERT_EQ(p.plane, n * out.c + c);
            ASSERT_EQ(p.row, h);
            ASSERT_EQ(p.col, w);
            const PoolOutput<std::uint32_t> p32 = poolOutputAt<std::uint32_t>(
                cl, std::uint32_t(o), std::uint32_t(out.c), std::uint32_t(out.h), std::uint32_t(out.w));
            ASSERT_EQ(p32.plane, std::uint32_t(p.plane));
            ASSERT_EQ(p32.row, std::uint32_t(h));
            ASSERT_EQ(p32.col, std::uint32_t(w));
          }
}

template <class T>
void checkTranspose(const Dims& d) {
  const std::int64_t total = d.n * d.c * d.h * d.w, hw = d.h * d.w;
  std::vector<T> logical(static_cast<std::size_t>(total)), packed(logical.size()),
      back(logical.size());
  for (std::int64_t i = 0; i < total; ++i) logical[i] = T(i * 37 + 5);
  cpu::transposeImage(true, sizeof(T), logical.data(), packed.data(), d.n, d.c, hw);
  for (std::int64_t e = 0; e < total; ++e)
    ASSERT_EQ(packed[e], logical[transposedOffset(true, e, d.c, hw)])
        << sizeof(T) << "-byte elements, NHWC offset " << e;
  cpu::transposeImage(false, sizeof(T), packed.data(), back.data(), d.n, d.c, hw);
  ASSERT_EQ(back, logical) << "the round trip";
}

TEST(ImageLayout, CpuTransposeMovesEveryElementWhereTheMathSays) {
  // 33 channels and 42 pixels: neither a multiple of the transpose's 32-element tiles.
  for (const Dims& d : kShapes) {
    checkTranspose<std::uint8_t>(d);
    checkTranspose<std::uint16_t>(d);
    checkTranspose<std::uint32_t>(d);
  }
  // Large enough to be split across threads.
  checkTranspose<std::uint16_t>({4, 70, 15, 17});
  std::uint64_t wide = 0;
  EXPECT_THROW(cpu::transposeImage(true, 8, &wide, &wide, 1, 1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace amp
