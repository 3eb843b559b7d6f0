// A digest of what a run trains and evaluates on: every feature, label and target of both
// sets, their shapes and counts. A checkpoint stores it, and resuming refuses data whose digest
// differs: a different file of the same size (or a relative data.path read from another folder)
// trained on silently, since sizes and the config alone looked the same.
#pragma once

#include <string>

#include "engine/data/dataset.h"

namespace amp {

// 16 hex digits. Not cryptographic: a 64-bit mix of every word (SplitMix64's finaliser), fast
// enough to run over a data set at each checkpoint and resume (Fashion-MNIST: about 0.1 s).
std::string dataFingerprint(const DataSplit& data);

}  // namespace amp
