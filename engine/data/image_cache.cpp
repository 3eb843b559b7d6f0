// Cache entries: checked on every field before a byte of them is used, CRC-32 (zlib) over the
// payload and the header, written with AtomicFile (checked_file.h) straight from the pixels.
#include "engine/data/image_cache.h"

#include <zlib.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "engine/core/checked_file.h"

namespace amp {
namespace {

constexpr char kMagic[8] = {'A', 'M', 'P', 'I', 'M', 'G', 'C', '\0'};

// Header layout (byte offsets).
constexpr std::size_t kVersionAt = 8, kChannelsAt = 12, kSizeAt = 16, kCountAt = 24, kKeyAt = 32,
                      kPayloadAt = 40, kPayloadCrcAt = 48, kHeaderCrcAt = 52;

void put32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
std::uint32_t get32(const unsigned char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}
std::uint64_t get64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

std::uint32_t crcOf(const void* data, std::size_t n) {
  return static_cast<std::uint32_t>(crc32_z(0, static_cast<const Bytef*>(data), n));
}

// FNV-1a, 64 bits: a key, not a defence against someone crafting collisions in their own cache.
struct Fnv64 {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  }
  void add(std::int64_t v) { add(std::to_string(v)); }
};

void noteOnce(const std::string& why) {
  static std::atomic<bool> noted{false};
  if (noted.exchange(true)) return;
  std::fprintf(stderr, "note: the image cache is not written (%s); the images will be decoded again next time\n",
               why.c_str());
}

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::int64_t payloadBytes(std::int64_t count, int size, int channels) {
  return count * channels * static_cast<std::int64_t>(size) * size;
}

}  // namespace

std::string imageCacheDir() {
  if (std::string dir = envOr("AMP_IMAGE_CACHE_DIR"); !dir.empty()) return dir;
  // XDG: a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (std::string xdg = envOr("XDG_CACHE_HOME"); !xdg.empty() && xdg[0] == '/') return xdg + "/ampstudio/images";
  if (std::string home = envOr("HOME"); !home.empty()) return home + "/.cache/ampstudio/images";
  return {};
}

std::uint64_t imageCacheKey(const ImageFolderListing& listing, int size, int channels) {
  Fnv64 f;
  f.add("ampstudio image cache\n");
  f.add(static_cast<std::int64_t>(kImageCacheVersion));
  f.add(" ");
  f.add(static_cast<std::int64_t>(size));
  f.add(" ");
  f.add(static_cast<std::int64_t>(channels));
  f.add("\n");
  for (const ImageFolderFile& file : listing.files) {
    // The separators cannot occur in what they separate (a NUL in a file name, a digit run
    // that swallows the next field), so two listings never hash the same text.
    f.add(file.relative);
    f.add(std::string_view("\0", 1));
    f.add(file.bytes);
    f.add(" ");
    f.add(file.mtimeNs);
    f.add("\n");
  }
  return f.h;
}

std::string imageCachePath(std::uint64_t key) {
  const std::string dir = imageCacheDir();
  if (dir.empty()) return {};
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.ampimg", static_cast<unsigned long long>(key));
  return dir + "/" + name;
}

std::optional<std::vector<std::uint8_t>> readImageCache(std::uint64_t key, std::int64_t count, int size,
                                                        int channels) {
  const std::string path = imageCachePath(key);
  if (path.empty()) return std::nullopt;
  const std::int64_t payload = payloadBytes(count, size, channels);
  std::string bytes;
  // Exactly the expected size or it is not our entry; readRegularFile also refuses a FIFO put
  // in its place.
  if (regularFileProblem(path) || readRegularFile(path, kImageCacheHeaderBytes + payload, bytes)) return std::nullopt;
  if (static_cast<std::int64_t>(bytes.size()) != kImageCacheHeaderBytes + payload) return std::nullopt;
  const auto* h = reinterpret_cast<const unsigned char*>(bytes.data());
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0 || get32(h + kVersionAt) != kImageCacheVersion ||
      get32(h + kChannelsAt) != static_cast<std::uint32_t>(channels) ||
      get32(h + kSizeAt) != static_cast<std::uint32_t>(size) ||
      get64(h + kCountAt) != static_cast<std::uint64_t>(count) || get64(h + kKeyAt) != key ||
      get64(h + kPayloadAt) != static_cast<std::uint64_t>(payload) ||
      get32(h + kHeaderCrcAt) != crcOf(h, kHeaderCrcAt))
    return std::nullopt;
  const unsigned char* data = h + kImageCacheHeaderBytes;
  if (get32(h + kPayloadCrcAt) != crcOf(data, static_cast<std::size_t>(payload))) return std::nullopt;
  return std::vector<std::uint8_t>(data, data + payload);
}

bool writeImageCache(std::uint64_t key, std::int64_t count, int size, int channels,
                     const std::vector<std::uint8_t>& pixels) {
  const std::string path = imageCachePath(key);
  if (path.empty()) {
    noteOnce("no cache folder: HOME, XDG_CACHE_HOME and AMP_IMAGE_CACHE_DIR are all unset");
    return false;
  }
  const std::int64_t payload = payloadBytes(count, size, channels);
  if (static_cast<std::int64_t>(pixels.size()) != payload) return false;  // a caller's bug; never write it
  unsigned char header[kImageCacheHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  put32(header + kVersionAt, kImageCacheVersion);
  put32(header + kChannelsAt, static_cast<std::uint32_t>(channels));
  put32(header + kSizeAt, static_cast<std::uint32_t>(size));
  put64(header + kCountAt, static_cast<std::uint64_t>(count));
  put64(header + kKeyAt, key);
  put64(header + kPayloadAt, static_cast<std::uint64_t>(payload));
  put32(header + kPayloadCrcAt, crcOf(pixels.data(), pixels.size()));
  put32(header + kHeaderCrcAt, crcOf(header, kHeaderCrcAt));
  try {
    makeFolders(imageCacheDir());
    AtomicFile f(path);
    f.write({reinterpret_cast<const char*>(header), sizeof header});
    f.write({reinterpret_cast<const char*>(pixels.data()), pixels.size()});
    f.commit();
  } catch (const OutputError& e) {
    noteOnce(e.what());
    return false;
  }
  return true;
}

}  // namespace amp
