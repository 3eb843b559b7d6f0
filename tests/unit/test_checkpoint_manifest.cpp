// manifest.json inputs found by fuzzing (tests/fuzz/fuzz_checkpoint_manifest): what the reader
// accepts must be what the writer can write back.
#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "engine/io/checkpoint_manifest.h"
#include "test_support.h"

using namespace amp;

namespace {

CheckpointInfo smallManifest() {
  CheckpointInfo m;
  m.loader.batchSize = 1;
  m.optimizerName = "sgd";
  m.optimizerScalars = {{"step", 0}};
  m.parameters = {{"0.weight", DType::F32, {2, 3}}};
  m.entries["model.safetensors"] = {QByteArray(64, 'a'), 10};
  return m;
}

// The manifest with `key` of its model.safetensors digest replaced by `value`.
QByteArray withDigestField(const char* key, const QJsonValue& value) {
  QJsonObject o = QJsonDocument::fromJson(manifestToJson(smallManifest())).object();
  QJsonObject entries = o["entries"].toObject();
  QJsonObject e = entries["model.safetensors"].toObject();
  e[key] = value;
  entries["model.safetensors"] = e;
  o["entries"] = entries;
  return QJsonDocument(o).toJson();
}

}  // namespace

TEST(CheckpointManifest, WrittenManifestReadsBack) {
  const QByteArray text = manifestToJson(smallManifest());
  EXPECT_EQ(manifestToJson(manifestFromJson(text)), text);
}

TEST(CheckpointManifest, DigestMustBeHexNotJust64Bytes) {
  // 62 characters, 64 bytes in UTF-8: accepted, then written back as Latin-1 (68 bytes), which
  // the reader refused.
  const QString notHex = QString(60, 'a') + QString::fromUtf8("\xc3\x92\xc3\x8c") ;
  ASSERT_EQ(notHex.toUtf8().size(), 64);
  EXPECT_EQ(test::messageOf<CheckpointError>([&] { manifestFromJson(withDigestField("sha256", notHex)); }),
            "manifest.json: \"entries.model.safetensors.sha256\" must be 64 hex digits");
  EXPECT_EQ(test::messageOf<CheckpointError>([&] { manifestFromJson(withDigestField("sha256", QString(64, 'g'))); }),
            "manifest.json: \"entries.model.safetensors.sha256\" must be 64 hex digits");
  // Upper-case hex is read as lower-case.
  EXPECT_EQ(manifestFromJson(withDigestField("sha256", QString(64, 'A'))).entries.at("model.safetensors").sha256,
            QByteArray(64, 'a'));
}

TEST(CheckpointManifest, ShapeDimensionsBeyond2To53AreRefused) {
  // 1.8e19 was cast to int64_t unchecked (undefined behaviour).
  QJsonObject o = QJsonDocument::fromJson(manifestToJson(smallManifest())).object();
  QJsonObject model = o["model"].toObject();
  QJsonArray params = model["parameters"].toArray();
  QJsonObject p = params[0].toObject();
  p["shape"] = QJsonArray{2, 1.8446744073709552e19};
  params[0] = p;
  model["parameters"] = params;
  o["model"] = model;
  EXPECT_EQ(test::messageOf<CheckpointError>([&] { manifestFromJson(QJsonDocument(o).toJson()); }),
            "manifest.json: \"model.parameters[0].shape\" must hold integers from 0 to 2^53");
}
