// Listing in byte order with stat() for sizes and times (the cache key), then decoding on all
// cores: workers take the next file index from an atomic counter, and an error stops the work
// on every later file while earlier ones still finish, so the error reported is always the
// first bad file in listing order, whatever the thread timing.
#include "engine/data/image_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "engine/core/checked_file.h"
#include "engine/data/image_cache.h"
#include "engine/data/image_decode.h"
#include "engine/data/image_resize.h"

namespace amp {
namespace {

namespace fs = std::filesystem;

// Deeper than any real data set nests; a symbolic link that points back up ends here.
constexpr int kMaxDepth = 16;

std::atomic<std::int64_t> g_decodes{0};

[[noreturn]] void fail(const std::string& where, const std::string& why) { throw DataError(where + ": " + why); }

// The entries of `dir` not starting with '.', in byte order.
std::vector<std::string> visibleEntries(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) fail(dir.string(), "cannot read the folder: " + ec.message());
  std::vector<std::string> names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] != '.') names.push_back(std::move(name));
  }
  if (ec) fail(dir.string(), "cannot read the folder: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// stat() through symbolic links; a dangling link is an error naming it.
struct stat statOf(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0)
    fail(p.string(), errno == ENOENT ? "no such file (a dangling symbolic link?)" : "cannot read: " + systemReason(errno));
  return st;
}

void walkClass(const fs::path& dir, const std::string& relative, int depth, std::int32_t label,
               ImageFolderListing& out) {
  for (const std::string& name : visibleEntries(dir)) {
    const fs::path p = dir / name;
    const std::string rel = relative + "/" + name;
    const struct stat st = statOf(p);
    if (S_ISDIR(st.st_mode)) {
      if (depth >= kMaxDepth) fail(p.string(), "nested more than 16 folders deep (a symbolic-link loop?)");
      walkClass(p, rel, depth + 1, label, out);
    } else if (S_ISREG(st.st_mode)) {
      if (static_cast<std::int64_t>(out.files.size()) >= kMaxFolderImages)
        fail(out.root, "more than " + std::to_string(kMaxFolderImages) + " files");
      ImageFolderFile f;
      f.path = p.string();
      f.relative = rel;
      f.bytes = st.st_size;
      f.mtimeNs = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      f.label = label;
      out.files.push_back(std::move(f));
      ++out.perClass[static_cast<std::size_t>(label)];
    } else {
      fail(p.string(), regularFileProblem(p.string()).value_or("not a regular file") + ", not an image");
    }
  }
}

ImageFolderListing listFolder(const std::string& root, std::size_t minClasses) {
  const fs::path top(root);
  std::error_code ec;
  if (!fs::exists(top, ec)) fail(root, "no such folder (an image folder holds one sub-folder per class)");
  if (!fs::is_directory(top, ec)) fail(root, "not a folder (an image folder holds one sub-folder per class)");
  ImageFolderListing out;
  out.root = root;
  // Only folders are classes; files beside them (a README, a labels.txt) belong to none and are
  // left alone, as torchvision's ImageFolder does.
  for (const std::string& name : visibleEntries(top))
    if (S_ISDIR(statOf(top / name).st_mode)) out.classNames.push_back(name);
  if (out.classNames.empty()) fail(root, "no class sub-folders (an image folder holds one sub-folder per class)");
  if (out.classNames.size() < minClasses)
    fail(root, "only one class sub-folder ('" + out.classNames[0] + "'); a classifier needs at least two");
  out.perClass.assign(out.classNames.size(), 0);
  for (std::size_t c = 0; c < out.classNames.size(); ++c) {
    walkClass(top / out.classNames[c], out.classNames[c], 1, static_cast<std::int32_t>(c), out);
    if (out.perClass[c] == 0)
      fail((top / out.classNames[c]).string(), "no images in this class folder (every class needs at least one)");
  }
  return out;
}

// One file: decoded, converted, resized, written channel-major into `dst`.
void decodeInto(const ImageFolderFile& file, int size, int channels, std::uint8_t* dst) {
  const DecodedImage img = decodeImageFile(file.path, channels);
  g_decodes.fetch_add(1, std::memory_order_relaxed);
  const std::vector<std::uint8_t> hwc = resizeImage(img.pixels.data(), img.width, img.height, channels, size, size);
  const std::size_t plane = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  for (std::size_t k = 0; k < plane; ++k)
    for (std::size_t c = 0; c < static_cast<std::size_t>(channels); ++c)
      dst[c * plane + k] = hwc[k * static_cast<std::size_t>(channels) + c];
}

void decodeAll(const ImageFolderListing& listing, int size, int channels, std::vector<std::uint8_t>& pixels) {
  const auto n = static_cast<std::int64_t>(listing.files.size());
  const std::size_t imageBytes = static_cast<std::size_t>(channels) * size * size;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> firstBad{n};
  std::mutex m;
  std::exception_ptr error;
  auto work = [&] {
    for (std::int64_t i; (i = next.fetch_add(1)) < n;) {
      if (i > firstBad.load()) continue;
      try {
        decodeInto(listing.files[static_cast<std::size_t>(i)], size, channels,
                   pixels.data() + static_cast<std::size_t>(i) * imageBytes);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (i < firstBad.load()) {
          firstBad = i;
          error = std::current_exception();
        }
      }
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto helpers = static_cast<std::size_t>(std::min<std::int64_t>(std::min(cores, 16u) - 1, n / 16));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < helpers; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: fewer workers, same result
    }
  }
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

ImageFolderListing listImageFolder(const std::string& root) { return listFolder(root, 2); }

ImageFolderListing listTestFolder(const std::string& root, const std::vector<std::string>& trainClasses) {
  ImageFolderListing test = listFolder(root, 1);
  std::vector<std::int32_t> toTrain(test.classNames.size());
  for (std::size_t c = 0; c < test.classNames.size(); ++c) {
    const auto it = std::find(trainClasses.begin(), trainClasses.end(), test.classNames[c]);
    if (it == trainClasses.end()) {
      std::string known;
      for (std::size_t k = 0; k < trainClasses.size(); ++k) known += (k ? ", " : "") + trainClasses[k];
      fail((fs::path(root) / test.classNames[c]).string(),
           "class '" + test.classNames[c] + "' is not in the training folder (its classes: " + known + ")");
    }
    toTrain[c] = static_cast<std::int32_t>(it - trainClasses.begin());
  }
  std::vector<std::int64_t> perClass(trainClasses.size(), 0);
  for (ImageFolderFile& f : test.files) {
    f.label = toTrain[static_cast<std::size_t>(f.label)];
    ++perClass[static_cast<std::size_t>(f.label)];
  }
  test.classNames = trainClasses;
  test.perClass = std::move(perClass);
  return test;
}

LoadedImages loadImageFolder(const ImageFolderListing& listing, int size, int channels, bool useCache) {
  LoadedImages out;
  ImageSet& s = out.images;
  s.count = static_cast<std::int64_t>(listing.files.size());
  s.channels = channels;
  s.height = s.width = size;
  s.labels.reserve(listing.files.size());
  for (const ImageFolderFile& f : listing.files) s.labels.push_back(f.label);
  const std::uint64_t key = imageCacheKey(listing, size, channels);
  if (useCache) {
    if (auto cached = readImageCache(key, s.count, size, channels)) {
      s.pixels = std::move(*cached);
      out.source = ImageSource::Cache;
      return out;
    }
  }
  s.pixels.resize(static_cast<std::size_t>(s.count * s.imageBytes()));
  decodeAll(listing, size, channels, s.pixels);
  if (useCache) writeImageCache(key, s.count, size, channels, s.pixels);
  return out;
}

std::int64_t imageDecodeCount() { return g_decodes.load(); }

}  // namespace amp
