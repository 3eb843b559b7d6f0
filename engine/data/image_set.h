// 8-bit images as the image readers produce them (Fashion-MNIST, CIFAR-10, image folders), and
// the one place where their pixels become the float features a Dataset holds: x/255, per-channel
// normalisation and zero padding, all through a per-channel table of 256 floats, so every reader
// gives exactly the values the PyTorch peers compute (ToTensor, then Normalize).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace amp {

struct ImageSet {
  std::int64_t count = 0;
  std::int64_t channels = 0, height = 0, width = 0;
  std::vector<std::uint8_t> pixels;  // count * imageBytes(), each image channel-major (C, H, W)
  std::vector<std::int32_t> labels;  // count
  std::int64_t imageBytes() const { return channels * height * width; }
};

// The images at `indices`, in that order (pixels and labels together).
ImageSet selectImages(const ImageSet& src, std::span<const std::int64_t> indices);

// Per-channel mean and population standard deviation of x/255 over every pixel of every image,
// in double (from a histogram of the 256 byte values per channel, so the sums are exact and the
// order of the images does not matter).
struct ChannelStats {
  std::vector<double> mean, stddev;
};
ChannelStats channelStats(const ImageSet& images);

// How pixels become features. normalize: "unit" (x/255) | "standard" ((x/255 - mean[c]) /
// stddev[c], in float, as torchvision's Normalize after ToTensor; a channel whose std is 0 is only
// centred) | "none" (x as a float, 0..255). padTo > 0: each image is centred in a padTo x padTo
// frame of pixel value 0 (normalised like any pixel 0: F.pad on x/255 before Normalize); an odd
// difference puts the extra row/column at the bottom/right.
struct PixelTransform {
  std::string normalize = "unit";
  std::vector<double> mean, stddev;  // per channel, for "standard"
  std::int64_t padTo = 0;
};

// The float Dataset of `images`: sample shape {C, H, W} (or {C, padTo, padTo}), the labels, the
// class names, and for "standard" the mean/std used. Throws DataError for a padTo smaller than
// the images or a mean/std of the wrong length.
Dataset imagesToDataset(const ImageSet& images, const PixelTransform& t, const std::string& name,
                        const std::vector<std::string>& classNames);

}  // namespace amp
