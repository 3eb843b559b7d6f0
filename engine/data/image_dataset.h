// The image data sets of DataOptions, cifar10 and images, from the options to a DataSplit: the
// reader, the train/test split, the normalisation statistics and the padding (image_set.h) in
// one order, and what a load will need, known before anything is decoded.
//
//   cifar10  data.path: the folder with data_batch_1..5.bin and test_batch.bin (or its parent).
//            Samples {3,32,32}; 50,000 train, 10,000 test; the ten CIFAR-10 class names.
//   images   data.path: the training folder, one sub-folder per class (image_folder.h);
//            data.test_path: a test folder with the same class sub-folders, or empty to hold
//            out data.test_fraction of every class (stratified, seeded: splitIndices).
//            Every image resized to data.image_size squared (image_resize.h) with
//            data.channels (3 RGB, 1 gray); samples {channels, size, size}, both sets in a
//            seeded shuffle of their files; decoded images cached (image_cache.h) unless
//            data.cache=off.
//   both     data.normalize: unit (x/255) | standard (per-channel mean/std of x/255 over the
//            training split, recorded on both Datasets) | none; data.pad_to: zero padding.
//
// Errors are DataErrors naming the key and the file: "data.path: /x/cats/3.png: not a PNG or
// JPEG image", "data.test_path: /t/zebra: class 'zebra' is not in the training folder ...".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/core/tensor.h"  // Shape
#include "engine/data/dataset.h"

namespace amp {

bool isImageDataSet(const std::string& name);  // cifar10 | images

// What loading the data set of `d` will give and need, from a listing or the files' sizes
// alone (nothing is decoded): the sample shape, classes, the split's counts after data.subset,
// and the host bytes the load peaks at (8-bit images, their split copies, the float features).
struct ImageDataPlan {
  Shape sample;
  int classes = 0;
  std::int64_t images = 0;  // train + test files' images, before data.subset
  std::int64_t trainCount = 0, testCount = 0;
  std::int64_t loadBytes = 0;
  std::string settings;  // what a refusal names: "data.image_size=1024 (3 x 1024 x 1024 a sample)"
  std::string source;    // "the 2000 images of /data/pets"
};

// Nothing for other data sets. Throws DataError as loadImageData would for the listing.
std::optional<ImageDataPlan> planImageData(const DataOptions& d);

// "data.image_size=1024 (...): the 2000 images of /data/pets need ≈ 23.4 GiB to load; 21.3 GiB
// available", or nothing when it fits (or the available memory is unknown).
std::optional<std::string> imageDataMemoryProblem(const ImageDataPlan& plan);

// Loads cifar10 or images as the header says (before data.subset, which loadDataset applies).
DataSplit loadImageData(const DataOptions& d);

}  // namespace amp
