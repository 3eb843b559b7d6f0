// Pixels to features through a table per channel: 256 floats computed once with the peers'
// float arithmetic, then one lookup per pixel (an epoch of CIFAR-10 converts in well under a
// second), padding written as the table's value for a pixel 0.
#include "engine/data/image_set.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace amp {
namespace {

using PixelTable = std::array<float, 256>;

PixelTable tableFor(const PixelTransform& t, std::size_t channel) {
  PixelTable lut{};
  for (int v = 0; v < 256; ++v) {
    const float unit = static_cast<float>(v) / 255.0f;
    if (t.normalize == "none") {
      lut[v] = static_cast<float>(v);
    } else if (t.normalize == "standard") {
      // A constant channel (std 0) would divide by zero: centre it only, as scikit-learn's
      // StandardScaler leaves zero-variance features unscaled.
      const double sd = t.stddev[channel] > 0 ? t.stddev[channel] : 1.0;
      lut[v] = (unit - static_cast<float>(t.mean[channel])) / static_cast<float>(sd);
    } else if (t.normalize == "unit") {
      lut[v] = unit;
    } else {
      throw DataError("data.normalize = '" + t.normalize + "': expected unit, standard or none");
    }
  }
  return lut;
}

}  // namespace

ImageSet selectImages(const ImageSet& src, std::span<const std::int64_t> indices) {
  ImageSet out;
  out.channels = src.channels;
  out.height = src.height;
  out.width = src.width;
  out.count = static_cast<std::int64_t>(indices.size());
  const auto bytes = static_cast<std::size_t>(src.imageBytes());
  out.pixels.resize(indices.size() * bytes);
  out.labels.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t j = indices[i];
    if (j < 0 || j >= src.count)
      throw std::out_of_range("selectImages: index " + std::to_string(j) + " outside " +
                              std::to_string(src.count) + " images");
    std::memcpy(out.pixels.data() + i * bytes, src.pixels.data() + static_cast<std::size_t>(j) * bytes, bytes);
    out.labels[i] = src.labels[static_cast<std::size_t>(j)];
  }
  return out;
}

ChannelStats channelStats(const ImageSet& images) {
  const auto channels = static_cast<std::size_t>(images.channels);
  const auto plane = static_cast<std::size_t>(images.height * images.width);
  std::vector<std::array<std::int64_t, 256>> histogram(channels, std::array<std::int64_t, 256>{});
  for (std::int64_t i = 0; i < images.count; ++i) {
    const std::uint8_t* img = images.pixels.data() + static_cast<std::size_t>(i) * channels * plane;
    for (std::size_t c = 0; c < channels; ++c) {
      auto& h = histogram[c];
      const std::uint8_t* p = img + c * plane;
      for (std::size_t k = 0; k < plane; ++k) ++h[p[k]];
    }
  }
  ChannelStats s;
  const double n = static_cast<double>(images.count) * static_cast<double>(plane);
  for (const auto& h : histogram) {
    double sum = 0;
    for (int v = 0; v < 256; ++v) sum += static_cast<double>(h[v]) * (v / 255.0);
    const double mean = n > 0 ? sum / n : 0.0;
    // Two passes over the histogram: the squared deviations from the mean, not E[x^2] - mean^2,
    // which loses digits when the std is small beside the mean.
    double squares = 0;
    for (int v = 0; v < 256; ++v) {
      const double d = v / 255.0 - mean;
      squares += static_cast<double>(h[v]) * d * d;
    }
    s.mean.push_back(mean);
    s.stddev.push_back(n > 0 ? std::sqrt(squares / n) : 0.0);
  }
  return s;
}

Dataset imagesToDataset(const ImageSet& images, const PixelTransform& t, const std::string& name,
                        const std::vector<std::string>& classNames) {
  const std::int64_t C = images.channels, H = images.height, W = images.width;
  const std::int64_t outH = t.padTo > 0 ? t.padTo : H, outW = t.padTo > 0 ? t.padTo : W;
  if (outH < H || outW < W)
    throw DataError("data.pad_to = " + std::to_string(t.padTo) + ": smaller than the " + std::to_string(H) +
                    "x" + std::to_string(W) + " images of " + name);
  if (t.normalize == "standard" &&
      (t.mean.size() != static_cast<std::size_t>(C) || t.stddev.size() != static_cast<std::size_t>(C)))
    throw DataError(name + ": " + std::to_string(t.mean.size()) + " channel means for " + std::to_string(C) +
                    " channels");
  std::vector<PixelTable> luts;
  for (std::int64_t c = 0; c < C; ++c) luts.push_back(tableFor(t, static_cast<std::size_t>(c)));

  Dataset d;
  d.name = name;
  d.sampleShape = {C, outH, outW};
  d.count = images.count;
  d.labels = images.labels;
  d.numClasses = static_cast<int>(classNames.size());
  d.classNames = classNames;
  if (t.normalize == "standard") {
    d.channelMean = t.mean;
    d.channelStd = t.stddev;
  }
  const std::int64_t top = (outH - H) / 2, left = (outW - W) / 2;
  const auto inPlane = static_cast<std::size_t>(H * W), outPlane = static_cast<std::size_t>(outH * outW);
  d.features.resize(static_cast<std::size_t>(images.count) * static_cast<std::size_t>(C) * outPlane);
  for (std::int64_t i = 0; i < images.count; ++i) {
    for (std::int64_t c = 0; c < C; ++c) {
      const PixelTable& lut = luts[static_cast<std::size_t>(c)];
      const std::uint8_t* src = images.pixels.data() + static_cast<std::size_t>(i * C + c) * inPlane;
      float* dst = d.features.data() + static_cast<std::size_t>(i * C + c) * outPlane;
      if (outPlane == inPlane) {
        for (std::size_t k = 0; k < inPlane; ++k) dst[k] = lut[src[k]];
        continue;
      }
      std::fill(dst, dst + outPlane, lut[0]);
      for (std::int64_t y = 0; y < H; ++y) {
        float* row = dst + (top + y) * outW + left;
        const std::uint8_t* in = src + y * W;
        for (std::int64_t x = 0; x < W; ++x) row[x] = lut[in[x]];
      }
    }
  }
  return d;
}

}  // namespace amp
