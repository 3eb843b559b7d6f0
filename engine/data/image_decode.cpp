// libpng and libjpeg report errors by longjmp. A longjmp over a C++ frame that holds objects with
// destructors is undefined behaviour, so each library call that can fail runs inside a small
// "phase" function whose frame holds only plain data: it calls setjmp, and on an error returns
// false with the library's message in a fixed buffer. Everything that owns memory (the pixel
// vector, the library handles' guards) lives in the callers' frames, which a longjmp never
// crosses, and is allocated between phases, where a C++ exception is safe.
#include "engine/data/image_decode.h"

#include <csetjmp>
#include <cstdio>  // before jpeglib.h, which uses FILE and size_t without including them
#include <cstring>

#include <png.h>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "engine/core/checked_file.h"
#include "engine/data/dataset.h"  // DataError

namespace amp {
namespace {

constexpr std::size_t kMessageBytes = 256;
// libjpeg-turbo's own fuzzers stop progressive JPEGs at 500 scans: beyond that a few kilobytes
// can cost minutes of decoding, and no real image has that many.
constexpr int kMaxJpegScans = 500;
// libjpeg's working memory (a progressive image keeps all its coefficients): a cap so a hostile
// file fails with a message rather than exhausting memory.
constexpr long kMaxJpegWorkMemory = 1L << 30;

[[noreturn]] void fail(const std::string& name, const std::string& why) { throw DataError(name + ": " + why); }

// Whether a w x h image is within the limits; if not, says why in `out` (plain C: this runs in
// the setjmp frames, which must hold no object with a destructor).
bool sizeAllowed(std::uint64_t w, std::uint64_t h, char* out, std::size_t n) {
  const char* why = nullptr;
  if (w == 0 || h == 0) why = "an image needs at least one pixel";
  else if (w > static_cast<std::uint64_t>(kMaxImageSide) || h > static_cast<std::uint64_t>(kMaxImageSide))
    why = "a side is longer than the 16384 pixels an image may have";
  else if (w * h > static_cast<std::uint64_t>(kMaxImagePixels))
    why = "more than the 67108864 pixels (64 Mpx) an image may have";
  if (!why) return true;
  std::snprintf(out, n, "%llu x %llu pixels: %s", static_cast<unsigned long long>(w),
                static_cast<unsigned long long>(h), why);
  return false;
}
static_assert(kMaxImageSide == 16384 && kMaxImagePixels == 67108864, "update the messages above");

// ---- PNG --------------------------------------------------------------------------------------

struct PngState {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0, pos = 0;
  char message[kMessageBytes] = {};
  char warning[kMessageBytes] = {};  // the latest, for an error that only sums up the warnings
  std::jmp_buf jump;
};

struct PngLayout {
  std::uint32_t width = 0, height = 0;
  int channels = 0;
  std::size_t rowBytes = 0;
};

[[noreturn]] void pngError(png_structp png, png_const_charp msg) {
  auto* st = static_cast<PngState*>(png_get_error_ptr(png));
  if (!msg) msg = "unknown libpng error";
  // libpng reports what is wrong with a header as warnings ("Image width exceeds user limit in
  // IHDR") and then fails with "Invalid IHDR data": the message carries the reason.
  // (A message past the buffer is cut, which is all right; using the count says so to GCC.)
  int written = 0;
  if (st->warning[0] && std::strcmp(msg, "Invalid IHDR data") == 0)
    written = std::snprintf(st->message, sizeof st->message, "%s (%s)", msg, st->warning);
  else
    written = std::snprintf(st->message, sizeof st->message, "%s", msg);
  if (written < 0) st->message[0] = 0;
  std::longjmp(st->jump, 1);
}

// Benign problems (a bad colour profile, text chunks): never printed, kept for pngError.
void pngWarning(png_structp png, png_const_charp msg) {
  auto* st = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(st->warning, sizeof st->warning, "%s", msg ? msg : "");
}

void pngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* st = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > st->size - st->pos) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, st->data + st->pos, n);
  st->pos += n;
}

// Phase 1: header, limits, transforms. Only plain data in this frame (see the top of the file).
bool pngReadLayout(png_structp png, png_infop info, PngState& st, PngLayout& out) {
  if (setjmp(st.jump)) return false;
  png_set_read_fn(png, &st, pngRead);
  png_set_user_limits(png, kMaxImageSide, kMaxImageSide);
  png_set_chunk_malloc_max(png, 8u << 20);
  png_set_chunk_cache_max(png, 1000);
  // Text, profiles and the like carry nothing a data set uses: skipped unread.
  static const png_byte kSkipped[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0eXIf\0tIME\0pHYs\0hIST\0";
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kSkipped, 9);
  png_read_info(png, info);
  png_uint_32 w = 0, h = 0;
  int depth = 0, colorType = 0;
  png_get_IHDR(png, info, &w, &h, &depth, &colorType, nullptr, nullptr, nullptr);
  if (!sizeAllowed(w, h, st.message, sizeof st.message)) return false;
  if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (colorType == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_scale_16(png);
  png_set_strip_alpha(png);  // also the alpha that a palette's tRNS chunk expands to
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.width = w;
  out.height = h;
  out.channels = png_get_channels(png, info);
  out.rowBytes = png_get_rowbytes(png, info);
  return true;
}

// Phase 2: the pixels, into rows the caller allocated.
bool pngReadRows(png_structp png, PngState& st, png_bytepp rows) {
  if (setjmp(st.jump)) return false;
  png_read_image(png, rows);
  return true;
}

DecodedImage decodePng(std::span<const std::uint8_t> bytes, const std::string& name) {
  PngState st;
  st.data = bytes.data();
  st.size = bytes.size();
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, pngError, pngWarning);
  if (!png) fail(name, "PNG: out of memory");
  png_infop info = png_create_info_struct(png);
  struct Guard {
    png_structp* png;
    png_infop* info;
    ~Guard() { png_destroy_read_struct(png, *info ? info : nullptr, nullptr); }
  } guard{&png, &info};
  if (!info) fail(name, "PNG: out of memory");

  PngLayout layout;
  if (!pngReadLayout(png, info, st, layout)) fail(name, std::string("PNG: ") + st.message);
  if ((layout.channels != 1 && layout.channels != 3) ||
      layout.rowBytes != static_cast<std::size_t>(layout.width) * static_cast<std::size_t>(layout.channels))
    fail(name, "PNG: unexpected layout after conversion (" + std::to_string(layout.channels) + " channels)");
  DecodedImage img;
  img.width = static_cast<int>(layout.width);
  img.height = static_cast<int>(layout.height);
  img.channels = layout.channels;
  img.pixels.resize(static_cast<std::size_t>(layout.height) * layout.rowBytes);
  std::vector<png_bytep> rows(layout.height);
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = img.pixels.data() + y * layout.rowBytes;
  if (!pngReadRows(png, st, rows.data())) fail(name, std::string("PNG: ") + st.message);
  return img;
}

// ---- JPEG -------------------------------------------------------------------------------------

struct JpegErrorState {
  jpeg_error_mgr mgr;  // first: libjpeg hands callbacks a pointer to it as cinfo->err
  std::jmp_buf jump;
  char message[kMessageBytes] = {};
};

struct JpegLayout {
  std::uint32_t width = 0, height = 0;
  int channels = 0;
};

[[noreturn]] void jpegErrorExit(j_common_ptr cinfo) {
  auto* st = reinterpret_cast<JpegErrorState*>(cinfo->err);
  char text[JMSG_LENGTH_MAX] = {};
  (*cinfo->err->format_message)(cinfo, text);
  std::snprintf(st->message, sizeof st->message, "%s", text);
  std::longjmp(st->jump, 1);
}

// Warnings that mean pixels were lost or made up (libjpeg fills a cut-off image with gray and
// carries on): errors here, so a truncated file is never a silently gray training image.
void jpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level != -1) return;  // trace messages
  switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
      jpegErrorExit(cinfo);
    default:
      return;  // e.g. extraneous bytes before a marker, an unknown JFIF revision: pixels intact
  }
}

void jpegOutputMessage(j_common_ptr) {}  // never print

void jpegProgress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxJpegScans) {
    auto* st = reinterpret_cast<JpegErrorState*>(cinfo->err);
    std::snprintf(st->message, sizeof st->message, "more than %d scans (a corrupt or hostile file)", kMaxJpegScans);
    std::longjmp(st->jump, 1);
  }
}

// Phase 1: header, limits, output colour space, start (a progressive image is read here).
bool jpegStart(jpeg_decompress_struct& cinfo, JpegErrorState& st, jpeg_progress_mgr* progress,
               const std::uint8_t* data, std::size_t size, JpegLayout& out) {
  if (setjmp(st.jump)) return false;
  jpeg_create_decompress(&cinfo);  // zeroes all but err and client_data: progress comes after
  cinfo.progress = progress;
  cinfo.mem->max_memory_to_use = kMaxJpegWorkMemory;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (!sizeAllowed(cinfo.image_width, cinfo.image_height, st.message, sizeof st.message)) return false;
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(st.message, sizeof st.message, "CMYK JPEG images are not supported (save it as RGB)");
    return false;
  }
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.channels = cinfo.output_components;
  return true;
}

// Phase 2: the scanlines, into the caller's buffer.
bool jpegReadRows(jpeg_decompress_struct& cinfo, JpegErrorState& st, std::uint8_t* pixels, std::size_t stride) {
  if (setjmp(st.jump)) return false;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels + std::size_t{cinfo.output_scanline} * stride;
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
      std::snprintf(st.message, sizeof st.message, "no data for row %u", cinfo.output_scanline);
      return false;
    }
  }
  return true;
}

DecodedImage decodeJpeg(std::span<const std::uint8_t> bytes, const std::string& name) {
  JpegErrorState st;
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = jpeg_std_error(&st.mgr);
  st.mgr.error_exit = jpegErrorExit;
  st.mgr.emit_message = jpegEmitMessage;
  st.mgr.output_message = jpegOutputMessage;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = jpegProgress;
  struct Guard {
    jpeg_decompress_struct* cinfo;
    ~Guard() { jpeg_destroy_decompress(cinfo); }  // safe on a struct whose create failed (mem null)
  } guard{&cinfo};

  JpegLayout layout;
  if (!jpegStart(cinfo, st, &progress, bytes.data(), bytes.size(), layout)) fail(name, std::string("JPEG: ") + st.message);
  if (layout.channels != 1 && layout.channels != 3)
    fail(name, "JPEG: " + std::to_string(layout.channels) + " colour components are not supported");
  DecodedImage img;
  img.width = static_cast<int>(layout.width);
  img.height = static_cast<int>(layout.height);
  img.channels = layout.channels;
  const std::size_t stride = static_cast<std::size_t>(layout.width) * static_cast<std::size_t>(layout.channels);
  img.pixels.resize(stride * layout.height);
  if (!jpegReadRows(cinfo, st, img.pixels.data(), stride)) fail(name, std::string("JPEG: ") + st.message);
  return img;
}

// ---- channels ---------------------------------------------------------------------------------

void convertChannels(DecodedImage& img, int channels) {
  if (img.channels == channels) return;
  const std::size_t n = static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height);
  std::vector<std::uint8_t> out(n * static_cast<std::size_t>(channels));
  if (channels == 3) {
    for (std::size_t i = 0; i < n; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = img.pixels[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned r = img.pixels[3 * i], g = img.pixels[3 * i + 1], b = img.pixels[3 * i + 2];
      out[i] = static_cast<std::uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000);
    }
  }
  img.pixels = std::move(out);
  img.channels = channels;
}

}  // namespace

ImageFormat imageFormatOf(std::span<const std::uint8_t> b) {
  static const std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), kPng, 8) == 0) return ImageFormat::Png;
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::Jpeg;
  return ImageFormat::Unknown;
}

DecodedImage decodeImage(std::span<const std::uint8_t> bytes, int channels, const std::string& name) {
  if (channels != 1 && channels != 3)
    fail(name, "cannot decode to " + std::to_string(channels) + " channels (1 or 3)");
  if (bytes.empty()) fail(name, "empty file (0 bytes), not a PNG or JPEG image");
  DecodedImage img;
  switch (imageFormatOf(bytes)) {
    case ImageFormat::Png: img = decodePng(bytes, name); break;
    case ImageFormat::Jpeg: img = decodeJpeg(bytes, name); break;
    default: fail(name, "not a PNG or JPEG image");
  }
  convertChannels(img, channels);
  return img;
}

DecodedImage decodeImageFile(const std::string& path, int channels) {
  std::string bytes;
  if (auto problem = readRegularFile(path, kMaxImageFileBytes, bytes)) throw DataError(*problem);
  return decodeImage({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, channels, path);
}

}  // namespace amp
