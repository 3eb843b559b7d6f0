// PNG/JPEG decoding and resizing, against files written here with libpng/libjpeg directly and
// against hand-computed pixels: every PNG kind exactly, JPEG within a tolerance, the channel
// conversions by their formulas, broken files as one line naming them, and the resize weights.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <fstream>

#include "engine/data/dataset.h"
#include "engine/data/image_decode.h"
#include "engine/data/image_resize.h"
#include "image_folder_fixture.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace amp;
using Bytes = std::vector<std::uint8_t>;

namespace {

const auto errorOf = test::messageOf<DataError>;

Bytes readBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

class ImageDecodeTest : public test::ScratchDirTest {
 protected:
  DecodedImage decodePng(const test::PngSpec& s, int channels, const std::string& name = "x.png") {
    test::writePng(m_dir / name, s);
    return decodeImageFile((m_dir / name).string(), channels);
  }
};

// A 3x2 RGB image with distinct values.
const Bytes kRgb = {10, 20, 30, 40, 50, 60, 70, 80, 90, 255, 0, 0, 0, 255, 0, 10, 200, 30};

TEST_F(ImageDecodeTest, Png8BitRgbAndGrayExactly) {
  test::writePng8(m_dir / "rgb.png", 3, 2, 3, kRgb);
  const DecodedImage rgb = decodeImageFile((m_dir / "rgb.png").string(), 3);
  EXPECT_EQ(rgb.width, 3);
  EXPECT_EQ(rgb.height, 2);
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.pixels, kRgb);

  const Bytes gray = {0, 1, 128, 254, 255, 77};
  test::writePng8(m_dir / "gray.png", 2, 3, 1, gray);
  EXPECT_EQ(decodeImageFile((m_dir / "gray.png").string(), 1).pixels, gray);
  // Gray to RGB copies the value into all three channels.
  const DecodedImage asRgb = decodeImageFile((m_dir / "gray.png").string(), 3);
  ASSERT_EQ(asRgb.pixels.size(), 18u);
  for (std::size_t i = 0; i < gray.size(); ++i)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(asRgb.pixels[3 * i + c], gray[i]);
}

TEST_F(ImageDecodeTest, RgbToGrayIsRoundedBt601Luma) {
  test::writePng8(m_dir / "rgb.png", 3, 2, 3, kRgb);
  const DecodedImage g = decodeImageFile((m_dir / "rgb.png").string(), 1);
  // 0.299 R + 0.587 G + 0.114 B, rounded by hand:
  // (10,20,30): 2.99+11.74+3.42 = 18.15 -> 18;  (40,50,60): 11.96+29.35+6.84 = 48.15 -> 48;
  // (70,80,90): 20.93+46.96+10.26 = 78.15 -> 78; (255,0,0): 76.245 -> 76; (0,255,0): 149.685 -> 150;
  // (10,200,30): 2.99+117.4+3.42 = 123.81 -> 124.
  EXPECT_EQ(g.channels, 1);
  EXPECT_EQ(g.pixels, (Bytes{18, 48, 78, 76, 150, 124}));
}

TEST_F(ImageDecodeTest, AlphaIsDroppedWithoutCompositing) {
  test::PngSpec s;
  s.width = 2;
  s.height = 1;
  s.colorType = PNG_COLOR_TYPE_RGBA;
  s.data = {200, 100, 50, 0, 1, 2, 3, 128};  // a fully transparent pixel keeps its colour
  EXPECT_EQ(decodePng(s, 3).pixels, (Bytes{200, 100, 50, 1, 2, 3}));
  s.colorType = PNG_COLOR_TYPE_GRAY_ALPHA;
  s.data = {9, 0, 250, 255};
  EXPECT_EQ(decodePng(s, 1, "ga.png").pixels, (Bytes{9, 250}));
}

TEST_F(ImageDecodeTest, PaletteWithTransparencyBecomesItsColours) {
  test::PngSpec s;
  s.width = 4;
  s.height = 1;
  s.colorType = PNG_COLOR_TYPE_PALETTE;
  s.bitDepth = 4;
  s.palette = {{255, 0, 0}, {0, 128, 0}, {1, 2, 3}};
  s.paletteAlpha = {0, 128};   // tRNS: the expansion to RGBA must still end in RGB
  s.data = {0x01, 0x20};       // indices 0, 1, 2, 0 packed two per byte, high nibble first
  EXPECT_EQ(decodePng(s, 3).pixels, (Bytes{255, 0, 0, 0, 128, 0, 1, 2, 3, 255, 0, 0}));
}

TEST_F(ImageDecodeTest, SixteenBitSamplesScaleToNearestEightBit) {
  test::PngSpec s;
  s.width = 3;
  s.height = 1;
  s.colorType = PNG_COLOR_TYPE_RGB;
  s.bitDepth = 16;
  // Big-endian; v / 257 rounded: 0x12FF = 4863 -> 18.92 -> 19 (dropping the low byte would give
  // 18), 1000 -> 3.89 -> 4, 65535 -> 255, 0 -> 0, 40000 -> 155.6 -> 156, 257 -> 1, 514 -> 2,
  // 50000 -> 194.6 -> 195, 12345 -> 48.03 -> 48 (none near a half, where rounding rules differ).
  s.data = {0x12, 0xFF, 0x03, 0xE8, 0xFF, 0xFF, 0x00, 0x00, 0x9C, 0x40,
            0x01, 0x01, 0x02, 0x02, 0xC3, 0x50, 0x30, 0x39};
  EXPECT_EQ(decodePng(s, 3).pixels, (Bytes{19, 4, 255, 0, 156, 1, 2, 195, 48}));
}

TEST_F(ImageDecodeTest, LowBitDepthGrayExpandsToFullRange) {
  test::PngSpec s;
  s.width = 8;
  s.height = 1;
  s.colorType = PNG_COLOR_TYPE_GRAY;
  s.bitDepth = 1;
  s.data = {0b10110001};
  EXPECT_EQ(decodePng(s, 1).pixels, (Bytes{255, 0, 255, 255, 0, 0, 0, 255}));
  s.width = 4;
  s.bitDepth = 2;
  s.data = {0b00011011};  // 0, 1, 2, 3 -> 0, 85, 170, 255
  EXPECT_EQ(decodePng(s, 1, "g2.png").pixels, (Bytes{0, 85, 170, 255}));
}

TEST_F(ImageDecodeTest, InterlacedPngDecodesLikeTheSameImagePlain) {
  test::PngSpec s;
  s.width = 13;
  s.height = 11;
  s.colorType = PNG_COLOR_TYPE_RGB;
  for (int i = 0; i < 13 * 11 * 3; ++i) s.data.push_back(static_cast<std::uint8_t>(i * 7 + 3));
  s.interlaced = true;
  EXPECT_EQ(decodePng(s, 3).pixels, s.data);
}

// A smooth colour image: JPEG keeps it within a few levels.
Bytes smoothImage(int w, int h, int channels) {
  Bytes px;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) px.push_back(static_cast<std::uint8_t>(40 + 4 * x + 3 * y + 30 * c));
  return px;
}

void expectClose(const Bytes& got, const Bytes& want, int maxDiff, double maxMeanDiff) {
  ASSERT_EQ(got.size(), want.size());
  double sum = 0;
  int worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const int d = std::abs(int(got[i]) - int(want[i]));
    worst = std::max(worst, d);
    sum += d;
  }
  EXPECT_LE(worst, maxDiff);
  EXPECT_LE(sum / got.size(), maxMeanDiff);
}

TEST_F(ImageDecodeTest, JpegMatchesThePixelsWrittenWithinTolerance) {
  const Bytes rgb = smoothImage(24, 16, 3);
  test::writeBytes(m_dir / "c.jpg", test::jpegBytes(24, 16, 3, rgb, 95, true));
  const DecodedImage img = decodeImageFile((m_dir / "c.jpg").string(), 3);
  EXPECT_EQ(img.width, 24);
  EXPECT_EQ(img.height, 16);
  expectClose(img.pixels, rgb, 6, 1.5);

  const Bytes gray = smoothImage(17, 9, 1);
  test::writeBytes(m_dir / "g.jpg", test::jpegBytes(17, 9, 1, gray, 95));
  expectClose(decodeImageFile((m_dir / "g.jpg").string(), 1).pixels, gray, 4, 1.0);

  test::writeBytes(m_dir / "p.jpg", test::jpegBytes(24, 16, 3, rgb, 95, true, true));
  expectClose(decodeImageFile((m_dir / "p.jpg").string(), 3).pixels, rgb, 6, 1.5);
}

TEST_F(ImageDecodeTest, FormatComesFromTheSignatureNotTheName) {
  test::writePng8(m_dir / "really-a-png.jpg", 3, 2, 3, kRgb);
  EXPECT_EQ(decodeImageFile((m_dir / "really-a-png.jpg").string(), 3).pixels, kRgb);
  test::writeBytes(m_dir / "really-a-jpeg.png", test::jpegBytes(24, 16, 3, smoothImage(24, 16, 3), 95, true));
  EXPECT_EQ(decodeImageFile((m_dir / "really-a-jpeg.png").string(), 3).width, 24);
}

TEST_F(ImageDecodeTest, BadFilesGiveOneLineNamingThem) {
  auto oneLine = [](const std::string& m) { EXPECT_EQ(m.find('\n'), std::string::npos) << m; };
  const std::string gif = (m_dir / "cat.gif.png").string();
  test::writeBytes(gif, {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0});
  EXPECT_EQ(errorOf([&] { decodeImageFile(gif, 3); }), gif + ": not a PNG or JPEG image");
  const std::string empty = (m_dir / "empty.png").string();
  test::writeBytes(empty, {});
  EXPECT_EQ(errorOf([&] { decodeImageFile(empty, 3); }), empty + ": empty file (0 bytes), not a PNG or JPEG image");

  // A PNG cut in half: libpng's reason, after the file's name.
  test::PngSpec s;
  s.width = s.height = 16;
  s.colorType = PNG_COLOR_TYPE_RGB;
  for (int i = 0; i < 16 * 16 * 3; ++i) s.data.push_back(static_cast<std::uint8_t>(i * 131));
  test::writePng(m_dir / "whole.png", s);
  Bytes png = readBytes(m_dir / "whole.png");
  const std::string cut = (m_dir / "cut.png").string();
  test::writeBytes(cut, Bytes(png.begin(), png.begin() + static_cast<long>(png.size() / 2)));
  std::string m = errorOf([&] { decodeImageFile(cut, 3); });
  EXPECT_EQ(m.rfind(cut + ": PNG: ", 0), 0u) << m;
  oneLine(m);
  // A flipped bit inside IHDR: the CRC no longer matches.
  Bytes bad = png;
  bad[16 + 3] ^= 0x01;  // the width's low byte (IHDR data starts at byte 16)
  const std::string crc = (m_dir / "crc.png").string();
  test::writeBytes(crc, bad);
  m = errorOf([&] { decodeImageFile(crc, 3); });
  EXPECT_HAS(m, crc + ": PNG: ");
  EXPECT_HAS(m, "CRC");
  oneLine(m);

  // A JPEG cut in half: libjpeg would fill the rest with gray and only warn; here it is an error.
  const Bytes jpeg = test::jpegBytes(64, 64, 3, smoothImage(64, 64, 3), 90);
  const std::string jcut = (m_dir / "cut.jpg").string();
  test::writeBytes(jcut, Bytes(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2)));
  m = errorOf([&] { decodeImageFile(jcut, 3); });
  EXPECT_EQ(m, jcut + ": JPEG: Premature end of JPEG file");
  // Only the signature: libjpeg's own reason.
  const std::string stub = (m_dir / "stub.jpg").string();
  test::writeBytes(stub, {0xFF, 0xD8, 0xFF});
  m = errorOf([&] { decodeImageFile(stub, 3); });
  EXPECT_EQ(m.rfind(stub + ": JPEG: ", 0), 0u) << m;
  oneLine(m);
}

TEST_F(ImageDecodeTest, SpecialFilesAreRefusedBeforeReading) {
  const std::string fifo = (m_dir / "pipe.png").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(errorOf([&] { decodeImageFile(fifo, 3); }), fifo + ": not a regular file (a pipe)");
  EXPECT_EQ(errorOf([&] { decodeImageFile((m_dir / "none.png").string(), 3); }),
            (m_dir / "none.png").string() + ": no such file");
}

// A PNG signature, an IHDR of w x h 8-bit RGB with a correct CRC, and the start of an IDAT:
// enough for libpng to read the header, and nothing to decode.
Bytes pngHeaderOnly(std::uint32_t w, std::uint32_t h) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  auto be32 = [&b](std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
  };
  be32(13);
  const std::size_t typeAt = b.size();
  for (char c : std::string("IHDR")) b.push_back(static_cast<std::uint8_t>(c));
  be32(w);
  be32(h);
  for (std::uint8_t v : {8, 2, 0, 0, 0}) b.push_back(v);
  be32(static_cast<std::uint32_t>(crc32(0, b.data() + typeAt, 17)));
  be32(100);
  for (char c : std::string("IDAT")) b.push_back(static_cast<std::uint8_t>(c));
  return b;
}

TEST_F(ImageDecodeTest, DeclaredSizesAreCappedBeforeAllocating) {
  const Bytes huge = pngHeaderOnly(9000, 9000);  // each side allowed, 81 Mpx is not
  std::string m = errorOf([&] { decodeImage(huge, 3, "huge.png"); });
  EXPECT_EQ(m, "huge.png: PNG: 9000 x 9000 pixels: more than the 67108864 pixels (64 Mpx) an image may have");
  m = errorOf([&] { decodeImage(pngHeaderOnly(20000, 1), 3, "wide.png"); });
  EXPECT_HAS(m, "wide.png: PNG: ");
  EXPECT_HAS(m, "exceeds user limit");

  // A JPEG whose SOF0 claims 20000 rows.
  Bytes jpeg = test::jpegBytes(8, 8, 3, smoothImage(8, 8, 3), 90);
  std::size_t sof = 2;
  while (sof + 9 < jpeg.size() && !(jpeg[sof] == 0xFF && jpeg[sof + 1] == 0xC0)) ++sof;
  ASSERT_LT(sof + 9, jpeg.size());
  jpeg[sof + 5] = 20000 >> 8;  // FF C0, length (2), precision (1), height (2), width (2)
  jpeg[sof + 6] = 20000 & 0xFF;
  m = errorOf([&] { decodeImage(jpeg, 3, "tall.jpg"); });
  EXPECT_EQ(m, "tall.jpg: JPEG: 8 x 20000 pixels: a side is longer than the 16384 pixels an image may have");
}

// ---- resize -------------------------------------------------------------------------------------

TEST(ImageResize, EqualSizeIsACopy) {
  Bytes px(5 * 7 * 3);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(i * 37);
  EXPECT_EQ(resizeImage(px.data(), 5, 7, 3, 5, 7), px);
  // One axis equal: its weights are the identity, so a 1-row image resized in width only
  // keeps its rows' values where the other axis is untouched.
  const ResampleAxis same = resampleAxis(6, 6);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(same.first[i], i);
    EXPECT_EQ(same.weights[i][0], 1.0f);
    for (std::size_t k = 1; k < same.weights[i].size(); ++k) EXPECT_EQ(same.weights[i][k], 0.0f);
  }
}

TEST(ImageResize, HalvingUsesTheWidenedTriangleRenormalisedAtTheBorders) {
  // 4 -> 2: scale 2, the triangle spans 2 source pixels each side. Output 0 is centred on 1.0:
  // source pixels 0, 1, 2 at distances 0.5, 0.5, 1.5 (in units of 2: 0.25, 0.25, 0.75) weigh
  // 0.75, 0.75, 0.25, over 1.75: 3/7, 3/7, 1/7 (pixel -1 would weigh 0.25 but is outside).
  // Output 1 mirrors it: pixels 1, 2, 3 weigh 1/7, 3/7, 3/7.
  const ResampleAxis a = resampleAxis(4, 2);
  EXPECT_EQ(a.first, (std::vector<int>{0, 1}));
  ASSERT_EQ(a.weights[0].size(), 3u);
  ASSERT_EQ(a.weights[1].size(), 3u);
  const double w0[3] = {3.0 / 7, 3.0 / 7, 1.0 / 7}, w1[3] = {1.0 / 7, 3.0 / 7, 3.0 / 7};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(a.weights[0][k], w0[k], 1e-7);
    EXPECT_NEAR(a.weights[1][k], w1[k], 1e-7);
  }
  // A 4x4 gray image v(y, x) = 16 y + 4 x + (x * y) % 3, resized with those weights by hand.
  Bytes px(16);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) px[y * 4 + x] = static_cast<std::uint8_t>(16 * y + 4 * x + (x * y) % 3);
  const double* W[2] = {w0, w1};
  Bytes want(4);
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox) {
      double v = 0;
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) v += W[oy][ky] * W[ox][kx] * px[(oy + ky) * 4 + (ox + kx)];
      want[oy * 2 + ox] = static_cast<std::uint8_t>(std::floor(v + 0.5));
    }
  EXPECT_EQ(resizeImage(px.data(), 4, 4, 1, 2, 2), want);
  // By hand for the first output: rows 0..2 of columns 0..2, weights 3/7, 3/7, 1/7 each way:
  // v = 0,4,8 / 16,21,26 / 32,38,41; rows 20/7, 137/7, 251/7; (3*20 + 3*137 + 251)/49 = 722/49
  // = 14.73 -> 15.
  EXPECT_EQ(want[0], 15);
}

TEST(ImageResize, UpscalingIsBilinearWithHalfPixelCentres) {
  // 2 -> 4: output centres at 0.25, 0.75, 1.25, 1.75 source pixels; the ends only see the
  // nearest pixel, the middle ones 3:1 mixes: 0, 25, 75, 100.
  const Bytes px = {0, 100};
  EXPECT_EQ(resizeImage(px.data(), 2, 1, 1, 4, 1), (Bytes{0, 25, 75, 100}));
}

TEST(ImageResize, DownscalingAveragesInsteadOfAliasing) {
  // A one-pixel checkerboard: point sampling would give all 0 or all 255; the widened filter
  // averages to mid-gray everywhere, also at the borders.
  Bytes px(64 * 64);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) px[y * 64 + x] = (x + y) % 2 ? 255 : 0;
  for (std::uint8_t v : resizeImage(px.data(), 64, 64, 1, 8, 8)) {
    EXPECT_GE(v, 120);
    EXPECT_LE(v, 135);
  }
  // A constant image stays constant, whatever the sizes.
  const Bytes flat(37 * 23 * 3, 77);
  for (std::uint8_t v : resizeImage(flat.data(), 37, 23, 3, 32, 32)) EXPECT_EQ(v, 77);
}

}  // namespace
