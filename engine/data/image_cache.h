// The on-disk cache of an image folder's decoded, resized images: decoding thousands of PNGs or
// JPEGs takes seconds to minutes; reading them back as one file of 8-bit pixels takes
// milliseconds.
//
// Where: $AMP_IMAGE_CACHE_DIR when set (tests), else $XDG_CACHE_HOME/ampstudio/images, else
// ~/.cache/ampstudio/images. One file per folder and setting, named by a key that hashes the
// folder's listing (each file's relative path, size and modification time), the image size,
// the channels and the format version: a file added, removed, renamed or rewritten gives another
// key, so a stale entry is never read (old entries stay until the folder is cleared by hand).
//
// Format (little-endian): a 64-byte header (magic "AMPIMGC\0", version, channels, size, count,
// key, payload bytes, CRC-32 of the payload, CRC-32 of the header) and then the images, each
// (C, H, W), in listing order. Entries are written atomically (temporary file, fsync, rename), so
// a reader never meets half an entry; a file that fails any check (magic, version, sizes, key,
// either CRC) is ignored and replaced after decoding, never trusted. A cache that cannot be
// written (no home, a read-only disk, a full one) is not an error: the data still loads, and one
// note per process goes to stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/image_folder.h"

namespace amp {

inline constexpr std::uint32_t kImageCacheVersion = 1;
inline constexpr std::int64_t kImageCacheHeaderBytes = 64;

// The folder the cache lives in, or empty when none can be named (no HOME).
std::string imageCacheDir();

std::uint64_t imageCacheKey(const ImageFolderListing& listing, int size, int channels);

// "<imageCacheDir()>/<key as 16 hex digits>.ampimg" (empty when there is no cache folder).
std::string imageCachePath(std::uint64_t key);

// The cached pixels of `count` images of channels x size x size under `key`, or nothing when
// there is no valid entry.
std::optional<std::vector<std::uint8_t>> readImageCache(std::uint64_t key, std::int64_t count, int size,
                                                        int channels);

// Stores `pixels` under `key`. Returns false (after the one-time note) when it cannot.
bool writeImageCache(std::uint64_t key, std::int64_t count, int size, int channels,
                     const std::vector<std::uint8_t>& pixels);

}  // namespace amp
