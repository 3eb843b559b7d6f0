// Image files for tests, written with libpng and libjpeg directly (never through the decoder
// under test): any PNG kind (gray, gray+alpha, RGB, RGBA, palette with or without tRNS, 1..16
// bits, interlaced), baseline or progressive JPEGs, and a whole generated image folder of
// learnable classes.
//
//   writeImageFolder(dir, classes, perClass, size, seed)
//     dir/class_00/000.png ... : `classes` classes of `perClass` size x size RGB PNGs each (class
//     and file numbers zero-padded to sort numerically: class_000 from 101 classes on). Class
//     k is a grating at angle k * 180° / classes (period size / 4, at least 4 pixels) with a
//     random phase, contrast and tint per image and Gaussian noise (sigma 12): the orientation is
//     the class, so a small CNN learns it in a few epochs, and nothing else gives it away.
//     Returns the class names (sorted as the loader sorts them). Seeded: same arguments, same
//     bytes. Used by the image data tests and the end-to-end ResNet tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>  // before jpeglib.h, which uses size_t and FILE without including them
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

// clang-format off
#include <png.h>
#include <jpeglib.h>
// clang-format on

#include "engine/data/rng.h"

namespace amp::test {

// A PNG of `width` x `height`; `rows` holds the packed sample bytes of each row, as PNG stores
// them (big-endian for 16 bits, bits packed from the most significant end for 1/2/4 bits).
struct PngSpec {
  int width = 0, height = 0;
  int colorType = PNG_COLOR_TYPE_RGB;  // PNG_COLOR_TYPE_GRAY, _GRAY_ALPHA, _RGB, _RGBA, _PALETTE
  int bitDepth = 8;
  bool interlaced = false;
  std::vector<std::uint8_t> data;             // height rows of png_get_rowbytes bytes
  std::vector<png_color> palette;             // PNG_COLOR_TYPE_PALETTE
  std::vector<std::uint8_t> paletteAlpha;     // tRNS for a palette (empty: none)
};

inline void writePng(const std::filesystem::path& path, const PngSpec& s) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path.string());
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    throw std::runtime_error("libpng failed writing " + path.string());
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, s.width, s.height, s.bitDepth, s.colorType,
               s.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!s.palette.empty()) png_set_PLTE(png, info, s.palette.data(), static_cast<int>(s.palette.size()));
  if (!s.paletteAlpha.empty())
    png_set_tRNS(png, info, s.paletteAlpha.data(), static_cast<int>(s.paletteAlpha.size()), nullptr);
  png_write_info(png, info);
  const std::size_t rowBytes = png_get_rowbytes(png, info);
  std::vector<png_bytep> rows(static_cast<std::size_t>(s.height));
  for (int y = 0; y < s.height; ++y)
    rows[static_cast<std::size_t>(y)] = const_cast<png_bytep>(s.data.data()) + static_cast<std::size_t>(y) * rowBytes;
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

// An 8-bit gray (channels 1) or RGB (channels 3) PNG from interleaved pixels.
inline void writePng8(const std::filesystem::path& path, int width, int height, int channels,
                      const std::vector<std::uint8_t>& pixels) {
  PngSpec s;
  s.width = width;
  s.height = height;
  s.colorType = channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB;
  s.data = pixels;
  writePng(path, s);
}

// A baseline JPEG (quality 0..100, 4:2:0 for colour unless `fullChroma`) in memory.
inline std::vector<std::uint8_t> jpegBytes(int width, int height, int channels, const std::vector<std::uint8_t>& pixels,
                                           int quality = 95, bool fullChroma = false, bool progressive = false) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  if (fullChroma && channels == 3)
    for (int i = 0; i < 3; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  if (progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data()) + std::size_t{c.next_scanline} * width * channels;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<std::uint8_t> bytes(out, out + size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

inline void writeBytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

// One size x size RGB image of class `k` of `classes` (see the top of the file), interleaved.
inline std::vector<std::uint8_t> gratingImage(int k, int classes, int size, Rng& rng) {
  const double pi = 3.14159265358979323846;
  const double angle = pi * k / classes;
  const double period = std::max(4.0, size / 4.0);
  const double phase = rng.uniform(0, 2 * pi);
  const double contrast = rng.uniform(60, 110);
  double tint[3];
  for (double& t : tint) t = rng.uniform(-25, 25);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(size) * size * 3);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const double wave = std::sin(2 * pi * (x * std::cos(angle) + y * std::sin(angle)) / period + phase);
      for (int c = 0; c < 3; ++c) {
        const double v = 128 + tint[c] + contrast * wave + rng.normal(0, 12);
        px[(static_cast<std::size_t>(y) * size + x) * 3 + c] =
            static_cast<std::uint8_t>(std::lround(std::min(255.0, std::max(0.0, v))));
      }
    }
  return px;
}

// Zeros that pad `number` to `width` digits (none when it is that long already).
inline std::string zeroPadding(const std::string& number, int width) {
  return std::string(number.size() < std::size_t(width) ? std::size_t(width) - number.size() : 0, '0');
}

inline std::vector<std::string> writeImageFolder(const std::filesystem::path& dir, int classes, int perClass, int size,
                                                 std::uint64_t seed) {
  Rng rng(seed, 0x1F01DE7);
  std::vector<std::string> names;
  // Zero-padded to the same width, so byte order (the loader's) is numeric order.
  const int digits = std::max<int>(2, static_cast<int>(std::to_string(std::max(classes - 1, 0)).size()));
  for (int k = 0; k < classes; ++k) {
    const std::string number = std::to_string(k);
    const std::string name = "class_" + zeroPadding(number, digits) + number;
    names.push_back(name);
    std::filesystem::create_directories(dir / name);
    const int fileDigits = std::max<int>(3, static_cast<int>(std::to_string(std::max(perClass - 1, 0)).size()));
    for (int i = 0; i < perClass; ++i) {
      const std::string index = std::to_string(i);
      const std::string file = zeroPadding(index, fileDigits) + index + ".png";
      writePng8(dir / name / file, size, size, 3, gratingImage(k, classes, size, rng));
    }
  }
  return names;
}

}  // namespace amp::test
