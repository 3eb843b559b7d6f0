// PNG (libpng) and JPEG (libjpeg-turbo) decoding to 8-bit grayscale or RGB, from bytes in
// memory. The format is told by the file's signature, never by its name.
//
// What comes out: PNG palette, grayscale and 1/2/4-bit images are expanded, 16-bit samples scaled
// to 8 bits (round(v / 257), libpng's png_set_scale_16), an alpha channel is dropped without
// compositing (the colour channels as stored: a data set's images are learnt as they are, and
// transparency carries no class), and gamma or colour profiles are not applied (as PIL and
// torchvision do). JPEGs decode with libjpeg-turbo's defaults (accurate integer IDCT, fancy
// upsampling); CMYK/YCCK JPEGs are refused. Grayscale to RGB copies the gray value; RGB to gray is
// ITU-R BT.601 luma rounded to nearest: (299 R + 587 G + 114 B + 500) / 1000.
//
// Hardening: dimensions are checked against kMaxImageSide and kMaxImagePixels before anything
// is allocated; every libpng/libjpeg error (and a JPEG warning that means lost pixels: a
// premature end, corrupt entropy data) becomes a DataError with the library's reason. The
// libraries' setjmp/longjmp error handling is confined to functions with no C++ objects in their
// frames, so no destructor is skipped; nothing is printed and nothing exits.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace amp {

inline constexpr std::int64_t kMaxImageSide = 16384;
inline constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 26;  // 64 Mpx (8192 x 8192)
// An image file larger than this is refused before it is read.
inline constexpr std::int64_t kMaxImageFileBytes = std::int64_t{256} << 20;

enum class ImageFormat { Unknown, Png, Jpeg };

// PNG: the 8-byte signature 89 50 4E 47 0D 0A 1A 0A; JPEG: an SOI marker followed by a marker
// (FF D8 FF).
ImageFormat imageFormatOf(std::span<const std::uint8_t> bytes);

struct DecodedImage {
  int width = 0, height = 0, channels = 0;  // channels: 1 or 3
  std::vector<std::uint8_t> pixels;         // height * width * channels, interleaved (H, W, C)
};

// Decodes `bytes` and converts them to `channels` (1 = gray, 3 = RGB). Throws DataError
// "NAME: REASON" ("not a PNG or JPEG image", "empty file", "PNG: IDAT: CRC error", "JPEG:
// Premature end of JPEG file", "8193 x 8193 pixels is more than the 67108864 an image may have").
DecodedImage decodeImage(std::span<const std::uint8_t> bytes, int channels, const std::string& name);

// The file at `path` (a regular file of at most kMaxImageFileBytes), as decodeImage; errors
// name the path.
DecodedImage decodeImageFile(const std::string& path, int channels);

}  // namespace amp
