// TensorBoard's event-file framing (TFRecord): each record is its length as a little-endian
// uint64, a masked CRC-32C of those 8 bytes, the data, and a masked CRC-32C of the data. The
// records carry serialized Event messages (tensorboard_event.proto); this layer knows nothing of
// them, so the framing is tested and fuzzed on its own.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace amp::tfevents {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) as TFRecord uses it, and the "mask"
// TFRecord applies so that a CRC stored inside data that is itself checksummed stays distinct.
std::uint32_t crc32c(std::string_view bytes);
std::uint32_t maskedCrc(std::uint32_t crc);

// Appends one framed record holding `data` to `out`.
void appendRecord(std::string& out, std::string_view data);

// A record's data as found in a file: its 1-based number and byte offset, for messages.
struct Record {
  std::int64_t index = 0;
  std::int64_t offset = 0;
  std::string_view data;  // points into the bytes given to splitRecords
};

// One line naming the file, the record and what is wrong with it.
class RecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No single event of ours is near this; a length beyond it is a corrupted header, refused before
// anything is allocated for it.
inline constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{256} << 20;

struct SplitResult {
  std::vector<Record> records;
  // A last record cut short (a writer still at work, or killed): the records before it are kept
  // and this says what was left out, naming the file and record. Empty when the file is whole.
  std::string truncatedTail;
};

// Splits a whole file's bytes into records, checking both CRCs of each. `file` names the file in
// messages. Throws RecordError for a bad CRC or a length over kMaxRecordBytes.
SplitResult splitRecords(std::string_view bytes, const std::string& file);
// The records are views into `bytes`: a temporary string would leave them dangling at the end of
// the full expression (ASan caught two tests reading freed memory so), hence refused at compile time.
SplitResult splitRecords(std::string&& bytes, const std::string& file) = delete;

}  // namespace amp::tfevents
