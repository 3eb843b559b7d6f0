// The safetensors writer and reader: byte layout as the format specifies it, round trips of every
// dtype, and one clear error for each way a file can be malformed.
#include <gtest/gtest.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <cstring>
#include <string>

#include "engine/io/safetensors.h"

namespace amp {
namespace {

SafeTensor makeTensor(const std::string& name, DType dt, Shape shape, int seed) {
  SafeTensor t{name, dt, shape, {}};
  const auto bytes = static_cast<qsizetype>(shapeNumel(shape) * static_cast<std::int64_t>(dtypeSize(dt)));
  t.data.resize(bytes);
  for (qsizetype i = 0; i < bytes; ++i) t.data[i] = static_cast<char>((i * 31 + seed * 7) & 0xFF);
  return t;
}

std::uint64_t headerLength(const QByteArray& file) {
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(file[i])) << (8 * i);
  return n;
}

// A file from a hand-written header, as another writer (or a corrupted file) might produce it.
QByteArray rawFile(const std::string& header, const QByteArray& data) {
  QByteArray out;
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.append(static_cast<char>((n >> (8 * i)) & 0xFF));
  out.append(header.data(), static_cast<qsizetype>(header.size()));
  out.append(data);
  return out;
}

std::string errorOf(const QByteArray& file) {
  try {
    readSafetensors(file);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  const std::vector<SafeTensor> in = {
      makeTensor("0.weight", DType::F32, {3, 5}, 1), makeTensor("0.bias", DType::F16, {3}, 2),
      makeTensor("1.bf", DType::BF16, {2, 1, 3}, 3), makeTensor("2.count", DType::I32, {}, 4),
      makeTensor("3.mask", DType::U8, {7}, 5),        makeTensor("4.empty", DType::F32, {0, 4}, 6)};
  const QByteArray file = writeSafetensors(in, {{"format", "pt"}, {"note", "quote \" and \\ ok"}});
  const SafetensorsFile out = readSafetensors(file);
  ASSERT_EQ(out.tensors.size(), in.size());
  for (const auto& t : in) {
    const SafeTensor* r = out.find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype) << t.name;
    EXPECT_EQ(r->shape, t.shape) << t.name;
    EXPECT_EQ(r->data, t.data) << t.name;
  }
  EXPECT_EQ(out.metadata.at("format"), "pt");
  EXPECT_EQ(out.metadata.at("note"), "quote \" and \\ ok");
  EXPECT_EQ(readSafetensors(writeSafetensors({})).tensors.size(), 0u);
}

TEST(Safetensors, LayoutFollowsTheFormat) {
  const QByteArray file = writeSafetensors(
      {makeTensor("b", DType::F16, {3}, 1), makeTensor("a", DType::F32, {2}, 2), makeTensor("c", DType::U8, {1}, 3)},
      {{"format", "pt"}});
  const std::uint64_t n = headerLength(file);
  EXPECT_EQ(n % 8, 0u) << "header padded to a multiple of 8";
  const QByteArray header = file.mid(8, static_cast<qsizetype>(n));
  EXPECT_TRUE(header.startsWith("{\"__metadata__\":{\"format\":\"pt\"},\"a\":"));  // keys sorted
  EXPECT_EQ(header.trimmed().back(), '}');
  EXPECT_TRUE(header.contains("\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"));
  // Largest elements first keeps every tensor aligned to its element size.
  EXPECT_TRUE(header.contains("\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[8,14]}"));
  EXPECT_TRUE(header.contains("\"c\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[14,15]}"));
  EXPECT_EQ(static_cast<std::uint64_t>(file.size()), 8 + n + 15);
  const QJsonDocument doc = QJsonDocument::fromJson(header);
  EXPECT_TRUE(doc.isObject());
}

TEST(Safetensors, ReadsAFileFromAnotherWriter) {
  // Written like the reference implementation would, with extra whitespace and key order.
  const float values[2] = {1.5f, -2.0f};
  const QByteArray data(reinterpret_cast<const char*>(values), sizeof values);
  const auto f = readSafetensors(rawFile(R"({ "w" : {"data_offsets":[0,8], "shape":[2,1], "dtype":"F32"} }  )", data));
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].shape, (Shape{2, 1}));
  float back[2];
  std::memcpy(back, f.tensors[0].data.constData(), sizeof back);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.0f);
}

TEST(Safetensors, WriterRefusesInconsistentInput) {
  EXPECT_THROW(writeSafetensors({makeTensor("x", DType::F32, {2}, 1), makeTensor("x", DType::F16, {2}, 1)}),
               SafetensorsError);
  SafeTensor bad = makeTensor("x", DType::F32, {2}, 1);
  bad.data.chop(1);
  EXPECT_THROW(writeSafetensors({bad}), SafetensorsError);
  EXPECT_THROW(writeSafetensors({makeTensor("__metadata__", DType::F32, {1}, 1)}), SafetensorsError);
}

TEST(Safetensors, MalformedFilesGiveOneClearMessage) {
  const QByteArray eight(8, 'x');
  EXPECT_NE(errorOf(QByteArray("abc")).find("too short"), std::string::npos);
  QByteArray huge = rawFile("{}", {});
  huge[7] = 0x7F;  // header length far past the end
  EXPECT_NE(errorOf(huge).find("runs past the end of the file"), std::string::npos);
  EXPECT_NE(errorOf(rawFile("{\"a\":", {})).find("not valid JSON"), std::string::npos);
  EXPECT_NE(errorOf(rawFile("[1,2]", {})).find("not a JSON object"), std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", eight))
                .find("tensor 'w': unsupported dtype 'F64'"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight))
                .find("tensor 'w': 8 bytes of data, but shape (3) of F32 needs 12"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight))
                .find("\"data_offsets\" must be [begin, end]"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight))
                .find("shape entries must be integers"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight))
                .find("run past the end of the data"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            eight))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight))
                .find("leave a gap"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight))
                .find("4 bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"__metadata__":{"k":1}})", {})).find("\"__metadata__\""), std::string::npos);
  EXPECT_NE(errorOf(rawFile(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", eight.left(4))).find("missing \"dtype\""),
            std::string::npos);
}

TEST(Safetensors, TruncatedFileIsRefused) {
  const QByteArray file = writeSafetensors({makeTensor("w", DType::F32, {16}, 1)});
  for (qsizetype cut : {file.size() - 1, file.size() - 60, qsizetype(20), qsizetype(7)})
    EXPECT_THROW(readSafetensors(file.left(cut)), SafetensorsError) << "cut at " << cut;
}

}  // namespace
}  // namespace amp
