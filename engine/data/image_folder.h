// An image-folder data set (torchvision's ImageFolder layout): one sub-folder per class, the
// class names the sub-folders' names in byte order, the images any files below them (sub-folders
// of a class folder are walked too). Names starting with '.' are skipped everywhere. Every file
// is taken for an image and decoded by its signature (a stray notes.txt is an error naming it,
// not a silently skipped sample).
//
// Loading decodes each image (image_decode.h), resizes it to size x size (image_resize.h) and
// keeps it as 8-bit (C, H, W), on all cores; the result goes into the cache (image_cache.h),
// so the next load of an unchanged folder reads one file instead of decoding again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/image_set.h"

namespace amp {

struct ImageFolderFile {
  std::string path;      // full path
  std::string relative;  // "cats/3.png", below the folder
  std::int64_t bytes = 0;
  std::int64_t mtimeNs = 0;  // modification time, nanoseconds since the epoch
  std::int32_t label = 0;    // index into classNames
};

struct ImageFolderListing {
  std::string root;
  std::vector<std::string> classNames;  // sorted
  std::vector<ImageFolderFile> files;   // by class, then by relative path
  std::vector<std::int64_t> perClass;   // files of each class
};

// More files than this in one folder is refused before anything is decoded.
inline constexpr std::int64_t kMaxFolderImages = 10'000'000;

// Lists `root`. Throws DataError naming the folder or entry: no such folder, no class
// sub-folders, a class folder with no images, a special file (FIFO, device), too deep a nesting
// (a symbolic-link loop), more than kMaxFolderImages files.
ImageFolderListing listImageFolder(const std::string& root);

// The test folder's listing with labels renumbered to `trainClasses` (a test folder may lack
// classes, not add them: an unknown class is an error naming its folder and the known classes).
ImageFolderListing listTestFolder(const std::string& root, const std::vector<std::string>& trainClasses);

// Whether the images were decoded or read from the cache, for messages and tests.
enum class ImageSource { Decoded, Cache };

struct LoadedImages {
  ImageSet images;  // listing order, {channels, size, size}
  ImageSource source = ImageSource::Decoded;
};

// Decodes and resizes every file of `listing` (through the cache when useCache). The first
// failing file in listing order is the error: "PATH: REASON".
LoadedImages loadImageFolder(const ImageFolderListing& listing, int size, int channels, bool useCache);

// How many images loadImageFolder has decoded in this process (a test hook: a second load that
// decodes none came from the cache).
std::int64_t imageDecodeCount();

}  // namespace amp
