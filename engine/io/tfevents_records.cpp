#include "engine/io/tfevents_records.h"

#include <array>
#include <cstdio>

namespace amp::tfevents {

namespace {

constexpr std::size_t kHeaderBytes = 12;  // length (8) + its masked CRC (4)
constexpr std::size_t kFooterBytes = 4;   // the data's masked CRC

std::array<std::uint32_t, 256> makeTable() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

void putLe(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint64_t getLe(std::string_view b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

std::string hex(std::uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> table = makeTable();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t maskedCrc(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

void appendRecord(std::string& out, std::string_view data) {
  std::string header;
  putLe(header, data.size(), 8);
  out += header;
  putLe(out, maskedCrc(crc32c(header)), 4);
  out.append(data);
  putLe(out, maskedCrc(crc32c(data)), 4);
}

SplitResult splitRecords(std::string_view bytes, const std::string& file) {
  SplitResult r;
  std::size_t at = 0;
  for (std::int64_t index = 1; at < bytes.size(); ++index) {
    const std::string where = file + ": record " + std::to_string(index) + " (offset " + std::to_string(at) + ")";
    const std::size_t left = bytes.size() - at;
    if (left < kHeaderBytes) {
      r.truncatedTail = where + ": cut short (" + std::to_string(left) + " bytes of its 12-byte header); left out";
      break;
    }
    const std::uint32_t lengthCrc = static_cast<std::uint32_t>(getLe(bytes, at + 8, 4));
    const std::uint32_t expectedLengthCrc = maskedCrc(crc32c(bytes.substr(at, 8)));
    if (lengthCrc != expectedLengthCrc)
      throw RecordError(where + ": length CRC mismatch (stored " + hex(lengthCrc) + ", computed " +
                        hex(expectedLengthCrc) + "): not a TensorBoard event file, or corrupted");
    const std::uint64_t length = getLe(bytes, at, 8);
    if (length > kMaxRecordBytes)
      throw RecordError(where + ": length " + std::to_string(length) + " bytes is over the " +
                        std::to_string(kMaxRecordBytes >> 20) + " MiB a record may have");
    if (left - kHeaderBytes < length + kFooterBytes) {
      r.truncatedTail = where + ": cut short (" + std::to_string(left - kHeaderBytes) + " of " +
                        std::to_string(length + kFooterBytes) + " bytes after its header); left out";
      break;
    }
    const std::string_view data = bytes.substr(at + kHeaderBytes, length);
    const std::uint32_t dataCrc = static_cast<std::uint32_t>(getLe(bytes, at + kHeaderBytes + length, 4));
    const std::uint32_t expectedDataCrc = maskedCrc(crc32c(data));
    if (dataCrc != expectedDataCrc)
      throw RecordError(where + ": data CRC mismatch (stored " + hex(dataCrc) + ", computed " +
                        hex(expectedDataCrc) + ")");
    r.records.push_back({index, static_cast<std::int64_t>(at), data});
    at += kHeaderBytes + length + kFooterBytes;
  }
  return r;
}

}  // namespace amp::tfevents
