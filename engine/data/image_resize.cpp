// The two passes share one weight table per axis (PIL's precompute_coeffs): each output pixel
// is a short dot product over contiguous source pixels, so a resize costs about
// (in / out + 1) multiply-adds per output value and axis.
#include "engine/data/image_resize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace amp {

ResampleAxis resampleAxis(int in, int out) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("resampleAxis: sizes " + std::to_string(in) + " -> " + std::to_string(out));
  ResampleAxis axis;
  axis.first.resize(static_cast<std::size_t>(out));
  axis.weights.resize(static_cast<std::size_t>(out));
  const double scale = static_cast<double>(in) / out;
  const double filterScale = std::max(scale, 1.0);
  const double support = filterScale;  // the triangle's half-width, 1 source pixel at 1:1
  for (int i = 0; i < out; ++i) {
    const double centre = (i + 0.5) * scale;
    // PIL truncates toward zero here; both bounds are clamped into the image.
    const int lo = std::max(0, static_cast<int>(centre - support + 0.5));
    const int hi = std::min(in, static_cast<int>(centre + support + 0.5));
    std::vector<double> w;
    double total = 0;
    for (int j = lo; j < hi; ++j) {
      const double t = std::fabs((j + 0.5 - centre) / filterScale);
      w.push_back(t < 1.0 ? 1.0 - t : 0.0);
      total += w.back();
    }
    auto& out_w = axis.weights[static_cast<std::size_t>(i)];
    for (double x : w) out_w.push_back(static_cast<float>(total > 0 ? x / total : 0.0));
    axis.first[static_cast<std::size_t>(i)] = lo;
  }
  return axis;
}

std::vector<std::uint8_t> resizeImage(const std::uint8_t* src, int width, int height, int channels,
                                      int outWidth, int outHeight) {
  if (width <= 0 || height <= 0 || channels <= 0 || outWidth <= 0 || outHeight <= 0)
    throw std::invalid_argument("resizeImage: bad sizes");
  const auto C = static_cast<std::size_t>(channels);
  if (width == outWidth && height == outHeight)
    return std::vector<std::uint8_t>(src, src + static_cast<std::size_t>(width) * height * C);

  // Rows first: (height, outWidth, C) in float.
  const ResampleAxis ax = resampleAxis(width, outWidth);
  const std::size_t rowOut = static_cast<std::size_t>(outWidth) * C;
  std::vector<float> tmp(static_cast<std::size_t>(height) * rowOut);
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* row = src + static_cast<std::size_t>(y) * width * C;
    float* dst = tmp.data() + static_cast<std::size_t>(y) * rowOut;
    for (int x = 0; x < outWidth; ++x) {
      const auto& w = ax.weights[static_cast<std::size_t>(x)];
      const std::uint8_t* p = row + static_cast<std::size_t>(ax.first[static_cast<std::size_t>(x)]) * C;
      for (std::size_t c = 0; c < C; ++c) {
        float acc = 0;
        for (std::size_t k = 0; k < w.size(); ++k) acc += w[k] * static_cast<float>(p[k * C + c]);
        dst[static_cast<std::size_t>(x) * C + c] = acc;
      }
    }
  }

  // Then columns, rounding once.
  const ResampleAxis ay = resampleAxis(height, outHeight);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(outHeight) * rowOut);
  std::vector<float> acc(rowOut);
  for (int y = 0; y < outHeight; ++y) {
    const auto& w = ay.weights[static_cast<std::size_t>(y)];
    const std::size_t first = static_cast<std::size_t>(ay.first[static_cast<std::size_t>(y)]);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::size_t k = 0; k < w.size(); ++k) {
      const float* row = tmp.data() + (first + k) * rowOut;
      for (std::size_t i = 0; i < rowOut; ++i) acc[i] += w[k] * row[i];
    }
    std::uint8_t* dst = out.data() + static_cast<std::size_t>(y) * rowOut;
    for (std::size_t i = 0; i < rowOut; ++i)
      dst[i] = static_cast<std::uint8_t>(std::floor(std::clamp(acc[i], 0.0f, 255.0f) + 0.5f));
  }
  return out;
}

}  // namespace amp
