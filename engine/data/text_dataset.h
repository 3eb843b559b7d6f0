// data.name=text: a byte-level language-modelling corpus, the data of the PyTorch GPT peer
// (shared/peers/pytorch_gpt.py). Every byte is a token (a vocabulary of 256, so any file and any
// encoding works without a tokenizer); the first 90% of the file trains, the last 10% validates.
// A sample is a window of sequence + 1 bytes: its first `sequence` bytes are the inputs, the
// same bytes shifted by one the labels (Dataset::tokens, windowStart). The training split offers
// every offset at which a window fits, and the loader's seeded permutation over them is the run's
// "random windows"; the validation split is 64 fixed windows at the peer's offsets, so the two
// programs' validation losses are measured on the same bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace amp {

inline constexpr int kTokenVocabulary = 256;  // bytes
// The peer evaluates torch.linspace(0, len(val) - block - 2, 64).long() windows.
inline constexpr std::int64_t kValidationWindows = 64;
// A corpus larger than this is refused before it is read: a data.path pointing at a disk image
// or a video by mistake must not fill the memory. The bytes are the small part: the loader's
// shuffled order holds 8 bytes per training window, one window per byte, so 128 MiB of text
// (enwik8's 95 MiB fits) costs about 1.2 GiB of host memory in all.
inline constexpr std::int64_t kMaxTextBytes = std::int64_t{128} << 20;

// The bytes of `path`: a file, or a folder whose regular files (following links, each file
// once, skipping hidden names, *.dat indexes like fortune's, and sub-folders) are concatenated
// in name order. Throws DataError naming the file or folder: missing, unreadable, not a regular
// file, a folder without text files, larger than kMaxTextBytes, empty, or binary.
std::vector<std::uint8_t> readTextCorpus(const std::string& path);

// Why `bytes` are not plain text, or "" when they are: a NUL byte, or more than 1% control
// bytes other than tab, newline, carriage return, form feed, vertical tab, backspace (fortune's
// overstrikes) and escape. Bytes >= 0x80 pass, so UTF-8 and Latin-1 text do.
std::string binaryReason(std::span<const std::uint8_t> bytes);

// The peer's validation offsets for a split of `length` bytes and windows of sequence + 1:
// torch.linspace(0, length - sequence - 2, count) in float32, truncated like .long(). A split
// too short for that range (length == sequence + 1) gets `count` windows at offset 0; none is
// ever out of range. Needs length >= sequence + 1 and sequence > 0.
std::vector<std::int64_t> validationWindowStarts(std::int64_t length, std::int64_t sequence,
                                                 std::int64_t count = kValidationWindows);

// Token data sets over `bytes` (at least sequence + 1 of them): every offset at which a window
// fits (count = bytes - sequence, windowStarts empty), or the fixed validation windows above.
Dataset everyWindow(std::vector<std::uint8_t> bytes, std::int64_t sequence, std::string name);
Dataset validationWindows(std::vector<std::uint8_t> bytes, std::int64_t sequence, std::string name);

// The bytes a corpus needs so that the 90% and the 10% split each hold a window of sequence + 1.
std::int64_t minimumTextBytes(std::int64_t sequence);

// data.name=text: opt.path (empty = kDefaultTextCorpus), windows of opt.sequence + 1 bytes.
// Splits are named "<file>/train" and "<file>/test" after the file or folder. Throws DataError
// (one line naming the file) for the corpus errors above, a corpus too short for a window in
// either split (saying how many bytes it needs), or opt.sequence <= 0.
DataSplit loadTextDataset(const DataOptions& opt);

}  // namespace amp
