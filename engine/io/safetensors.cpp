#include "engine/io/safetensors.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <cmath>
#include <cstdio>

namespace amp {

namespace {

constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53: JSON numbers are doubles
constexpr const char* kMetadataKey = "__metadata__";

// JSON string literal. Written by hand (not QJsonDocument) so that the header's bytes are fully
// ours: integers never come out as "1e+06", which strict readers (Rust's serde) reject.
std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string tensorText(const std::string& name) { return "tensor '" + name + "'"; }

// A JSON number that must be a non-negative integer a double holds exactly; -1 if it is not.
std::int64_t jsonCount(const QJsonValue& v) {
  const double d = v.toDouble();
  if (!v.isDouble() || !(d >= 0 && d <= kMaxExactInteger && d == std::floor(d))) return -1;
  return static_cast<std::int64_t>(d);
}

struct Entry {
  std::string name;
  std::uint64_t begin = 0, end = 0;
};

SafeTensor parseTensorEntry(const std::string& name, const QJsonValue& value, Entry& range) {
  const std::string where = tensorText(name);
  if (!value.isObject()) throw SafetensorsError(where + ": expected an object");
  const QJsonObject o = value.toObject();
  SafeTensor t;
  t.name = name;
  const QJsonValue dt = o.value("dtype");
  if (!dt.isString()) throw SafetensorsError(where + ": missing \"dtype\"");
  const auto dtype = parseSafetensorsDtype(dt.toString().toStdString());
  if (!dtype)
    throw SafetensorsError(where + ": unsupported dtype '" + dt.toString().toStdString() +
                           "' (expected F32, F16, BF16, I32 or U8)");
  t.dtype = *dtype;
  const QJsonValue shape = o.value("shape");
  if (!shape.isArray()) throw SafetensorsError(where + ": missing \"shape\"");
  double numel = 1;
  for (const QJsonValue& d : shape.toArray()) {
    const std::int64_t n = jsonCount(d);
    if (n < 0) throw SafetensorsError(where + ": shape entries must be integers >= 0");
    t.shape.push_back(n);
    numel *= static_cast<double>(n);
  }
  // Both offsets parsed before either is used; [begin, end] with begin <= end.
  const QJsonArray off = o.value("data_offsets").toArray();
  const std::int64_t first = off.size() == 2 ? jsonCount(off[0]) : -1;
  const std::int64_t last = off.size() == 2 ? jsonCount(off[1]) : -1;
  if (first < 0 || last < first)
    throw SafetensorsError(where + ": \"data_offsets\" must be [begin, end] with 0 <= begin <= end");
  const auto begin = static_cast<std::uint64_t>(first), end = static_cast<std::uint64_t>(last);
  const double expected = numel * static_cast<double>(dtypeSize(t.dtype));
  if (expected > kMaxExactInteger || static_cast<double>(end - begin) != expected)
    throw SafetensorsError(where + ": " + std::to_string(end - begin) + " bytes of data, but shape " +
                           shapeString(t.shape) + " of " + dt.toString().toStdString() + " needs " +
                           QString::number(expected, 'f', 0).toStdString());
  range = {name, begin, end};
  return t;
}

}  // namespace

const SafeTensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<std::string> safetensorsDtypeName(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::U8: return "U8";
  }
  return std::nullopt;
}

std::optional<DType> parseSafetensorsDtype(const std::string& s) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8})
    if (safetensorsDtypeName(t) == s) return t;
  return std::nullopt;
}

QByteArray writeSafetensors(const std::vector<SafeTensor>& tensors,
                            const std::map<std::string, std::string>& metadata) {
  std::vector<const SafeTensor*> order;
  for (const auto& t : tensors) {
    if (t.name == kMetadataKey) throw SafetensorsError("tensor name '__metadata__' is reserved");
    const auto bytes = static_cast<std::size_t>(shapeNumel(t.shape)) * dtypeSize(t.dtype);
    if (static_cast<std::size_t>(t.data.size()) != bytes)
      throw SafetensorsError(tensorText(t.name) + ": " + std::to_string(t.data.size()) +
                             " bytes given for shape " + shapeString(t.shape) + " (" +
                             std::to_string(bytes) + " expected)");
    order.push_back(&t);
  }
  // Largest elements first: every offset stays a multiple of its tensor's element size, so a
  // reader may map the data without copying.
  std::sort(order.begin(), order.end(), [](const SafeTensor* a, const SafeTensor* b) {
    if (dtypeSize(a->dtype) != dtypeSize(b->dtype)) return dtypeSize(a->dtype) > dtypeSize(b->dtype);
    return a->name < b->name;
  });

  // Header entries keyed by name: std::map sorts them, as the format's writers do.
  std::map<std::string, std::string> entries;
  std::uint64_t offset = 0;
  for (const SafeTensor* t : order) {
    std::string shape;
    for (std::size_t i = 0; i < t->shape.size(); ++i)
      shape += (i ? "," : "") + std::to_string(t->shape[i]);
    const std::uint64_t end = offset + static_cast<std::uint64_t>(t->data.size());
    const std::string value = "{\"dtype\":\"" + *safetensorsDtypeName(t->dtype) + "\",\"shape\":[" +
                              shape + "],\"data_offsets\":[" + std::to_string(offset) + "," +
                              std::to_string(end) + "]}";
    if (!entries.emplace(t->name, value).second)
      throw SafetensorsError(tensorText(t->name) + ": duplicate name");
    offset = end;
  }
  if (!metadata.empty()) {
    std::string meta;
    for (const auto& [k, v] : metadata) meta += (meta.empty() ? "" : ",") + jsonString(k) + ":" + jsonString(v);
    entries.emplace(kMetadataKey, "{" + meta + "}");
  }
  std::string header = "{";
  for (const auto& [k, v] : entries) header += (header.size() > 1 ? "," : "") + jsonString(k) + ":" + v;
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data then starts 8-byte aligned

  QByteArray out;
  out.reserve(static_cast<qsizetype>(8 + header.size() + offset));
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.append(static_cast<char>((n >> (8 * i)) & 0xFF));
  out.append(header.data(), static_cast<qsizetype>(header.size()));
  for (const SafeTensor* t : order) out.append(t->data);
  return out;
}

SafetensorsFile readSafetensors(const QByteArray& bytes) {
  const auto size = static_cast<std::uint64_t>(bytes.size());
  if (size < 8)
    throw SafetensorsError("the file is " + std::to_string(size) +
                           " bytes long, too short for the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (n > size - 8)
    throw SafetensorsError("header length " + std::to_string(n) + " runs past the end of the file (" +
                           std::to_string(size) + " bytes)");
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(bytes.mid(8, static_cast<qsizetype>(n)), &err);
  if (err.error != QJsonParseError::NoError)
    throw SafetensorsError("header is not valid JSON at offset " + std::to_string(err.offset) + " (" +
                           err.errorString().toStdString() + ")");
  if (!doc.isObject()) throw SafetensorsError("header is not a JSON object");
  const QJsonObject root = doc.object();

  SafetensorsFile file;
  std::vector<Entry> ranges;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string name = it.key().toStdString();
    if (name == kMetadataKey) {
      if (!it.value().isObject()) throw SafetensorsError("\"__metadata__\" must be an object");
      const QJsonObject meta = it.value().toObject();
      for (auto m = meta.begin(); m != meta.end(); ++m) {
        if (!m.value().isString())
          throw SafetensorsError("\"__metadata__\": value of '" + m.key().toStdString() + "' must be a string");
        file.metadata[m.key().toStdString()] = m.value().toString().toStdString();
      }
      continue;
    }
    Entry range;
    file.tensors.push_back(parseTensorEntry(name, it.value(), range));
    ranges.push_back(range);
  }

  // The data section must be covered exactly: no gaps, no overlaps, nothing past its end.
  const std::uint64_t dataSize = size - 8 - n;
  std::vector<std::size_t> byBegin(ranges.size());
  for (std::size_t i = 0; i < byBegin.size(); ++i) byBegin[i] = i;
  std::sort(byBegin.begin(), byBegin.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a].begin != ranges[b].begin ? ranges[a].begin < ranges[b].begin : ranges[a].end < ranges[b].end;
  });
  std::uint64_t expected = 0;
  std::string previous;
  for (std::size_t i : byBegin) {
    const Entry& r = ranges[i];
    const std::string where = tensorText(r.name) + ": data_offsets [" + std::to_string(r.begin) + ", " +
                              std::to_string(r.end) + "]";
    if (r.end > dataSize)
      throw SafetensorsError(where + " run past the end of the data (" + std::to_string(dataSize) + " bytes)");
    if (r.begin < expected) throw SafetensorsError(where + " overlap " + tensorText(previous));
    if (r.begin > expected)
      throw SafetensorsError(where + " leave a gap after byte " + std::to_string(expected));
    expected = r.end;
    previous = r.name;
  }
  if (expected != dataSize)
    throw SafetensorsError(std::to_string(dataSize - expected) + " bytes after the last tensor belong to none");

  const qsizetype base = static_cast<qsizetype>(8 + n);
  for (std::size_t i = 0; i < ranges.size(); ++i)
    file.tensors[i].data = bytes.mid(base + static_cast<qsizetype>(ranges[i].begin),
                                     static_cast<qsizetype>(ranges[i].end - ranges[i].begin));
  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const SafeTensor& a, const SafeTensor& b) { return a.name < b.name; });
  return file;
}

}  // namespace amp
