// Damaged and foreign checkpoints: each is refused with one line naming the file, the entry and
// the problem, and the trainer it was loaded into keeps its state.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <cstring>
#include <memory>

#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/io/zip_entries.h"
#include "tests/unit/checkpoint_test_support.h"
#include "tests/unit/test_support.h"

namespace amp {
namespace {

class CheckpointErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(m_dir.isValid());
    Trainer source(spiralsConfig());
    for (int i = 0; i < 5; ++i) source.step();
    m_good = m_dir.filePath("good.zip");
    saveCheckpoint(source, m_good, "{\"step\":1}\n");
    QFile f(m_good);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    m_bytes = f.readAll();
    m_target = std::make_unique<Trainer>(spiralsConfig());
    m_target->step();  // a trainer with state of its own, which a failed load must keep
    m_before = stateBytes(*m_target);
  }

  QString writeFile(const QString& name, const QByteArray& bytes) {
    const QString path = m_dir.filePath(name);
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(bytes);
    return path;
  }

  // A copy of the good checkpoint with entries replaced (or removed when given null bytes).
  QString rewritten(const QString& name, const std::map<QString, QByteArray>& changes) {
    std::vector<ZipEntry> entries;
    for (const auto& [n, data] : readZipEntries(m_good)) {
      const auto it = changes.find(n);
      if (it == changes.end()) entries.push_back({n, data, true});
      else if (!it->second.isNull()) entries.push_back({n, it->second, true});
    }
    const QString path = m_dir.filePath(name);
    writeZipAtomically(path, entries);
    return path;
  }

  // The manifest with its digest of `entry` updated, so only the entry's contents are wrong.
  QByteArray manifestWithDigest(const QString& entry, const QByteArray& data) {
    QJsonObject m = QJsonDocument::fromJson(readZipEntries(m_good).at("manifest.json")).object();
    QJsonObject entries = m["entries"].toObject();
    entries[entry] = QJsonObject{{"sha256", QString::fromLatin1(sha256Hex(data))}, {"bytes", double(data.size())}};
    m["entries"] = entries;
    return QJsonDocument(m).toJson();
  }

  // Loading `path` fails with a message containing every one of `parts`, changing nothing.
  void expectRefused(const QString& path, std::initializer_list<const char*> parts) {
    std::string message;
    try {
      loadCheckpoint(*m_target, path);
    } catch (const CheckpointError& e) {
      message = e.what();
    }
    ASSERT_FALSE(message.empty()) << "loaded " << path.toStdString();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find(path.toStdString()), std::string::npos) << message;
    for (const char* p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
    EXPECT_EQ(stateBytes(*m_target), m_before) << "a failed load changed the trainer";
  }

  QTemporaryDir m_dir;
  QString m_good;
  QByteArray m_bytes;
  std::unique_ptr<Trainer> m_target;
  std::map<std::string, std::vector<std::uint8_t>> m_before;
};

TEST_F(CheckpointErrors, GoodCheckpointLoads) {
  EXPECT_NO_THROW(loadCheckpoint(*m_target, m_good));
  EXPECT_EQ(m_target->stepsDone(), 5);
}

TEST_F(CheckpointErrors, NotAZipOrMissing) {
  expectRefused(writeFile("text.zip", "this is not a zip file"), {"not a zip archive"});
  expectRefused(m_dir.filePath("absent.zip"), {"no such file"});
  EXPECT_THROW(readCheckpointInfo(m_dir.filePath("absent.zip")), CheckpointError);
}

TEST_F(CheckpointErrors, TruncatedZip) {
  for (double keep : {0.9, 0.5, 0.1})
    expectRefused(writeFile("cut.zip", m_bytes.left(qsizetype(m_bytes.size() * keep))), {"zip"});
  EXPECT_THROW(readCheckpointInfo(writeFile("cut.zip", m_bytes.left(m_bytes.size() - 10))), CheckpointError);
}

// Bytes after the zip's end record (a botched copy, two files concatenated) are not a zip this
// program wrote: minizip alone would open it by searching backwards for the record.
TEST_F(CheckpointErrors, BytesAfterTheZipDirectory) {
  expectRefused(writeFile("tail.zip", m_bytes + QByteArray(100, 'x')),
                {"does not end with its zip directory"});
  expectRefused(writeFile("twice.zip", m_bytes + m_bytes.left(m_bytes.size() / 2)), {"zip"});
}

// Decompression bombs: 64 MiB of zeros deflate to about 64 KiB. Each is refused from the zip
// directory's declared sizes, before anything is inflated; the messages come from that check.
TEST_F(CheckpointErrors, BombsAreRefusedBeforeInflating) {
  const QByteArray zeros(64 << 20, '\0');
  const QString extra = m_dir.filePath("extra.zip");
  {
    std::vector<ZipEntry> entries;
    for (const auto& [n, data] : readZipEntries(m_good)) entries.push_back({n, data, true});
    entries.push_back({"extra.bin", zeros, true});
    writeZipAtomically(extra, entries);
  }
  ASSERT_LT(QFileInfo(extra).size(), 2 << 20);
  // Before, the extra entry was inflated and the checkpoint accepted.
  expectRefused(extra, {"extra.bin", "unexpected entry"});
  // Before, the model entry was inflated, then found not to match the manifest.
  expectRefused(rewritten("model-bomb.zip", {{"model.safetensors", zeros}}),
                {"model.safetensors", "declares 67108864 bytes, but manifest.json lists"});
  expectRefused(rewritten("manifest-bomb.zip", {{"manifest.json", zeros}}),
                {"manifest.json", "declares 67108864 bytes uncompressed, more than the 16777216"});
  // The global cap, and the per-entry cap, for any reader of zips (experiments, bundles).
  ZipReadLimits limits;
  limits.maxEntryBytes = 1000;
  EXPECT_HAS(test::messageOf<CheckpointError>([&] { readZipEntries(extra, {}, limits); }),
             "an entry may hold");
  limits = {};
  limits.maxTotalBytes = 60 << 20;
  EXPECT_HAS(test::messageOf<CheckpointError>([&] { readZipEntries(extra, {}, limits); }),
             "bytes uncompressed in all");
}

// A zip's directory can declare any size. Before, a 4 KB zip declaring a 3.9 GB entry was given
// a 3.9 GB buffer before its first byte was read (fuzz_zip_entries, out of memory under 2 GB).
// Sizes that the compressed bytes cannot hold are now refused from the directory alone.
TEST_F(CheckpointErrors, SizesTheCompressedBytesCannotHoldAreRefusedUnread) {
  const QString packed = m_dir.filePath("packed.zip");
  writeZipAtomically(packed, {{"deflated.bin", QByteArray(100000, '\0'), true}, {"stored.bin", "hello", false}});
  QFile f(packed);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QByteArray bytes = f.readAll();
  ASSERT_EQ(readZipEntries(packed).at("deflated.bin").size(), 100000);
  // The central directory's record of `entry`, with a 32-bit field at `offset` (20: compressed
  // size, 24: uncompressed size) set to `value`; the local header is left alone, as minizip
  // trusts the directory.
  const auto patched = [&](const char* entry, int offset, quint32 value) {
    QByteArray b = bytes;
    for (qsizetype at = 0; (at = b.indexOf("PK\x01\x02", at)) >= 0; at += 4) {
      if (b.mid(at + 46, qsizetype(std::strlen(entry))) != entry) continue;
      for (int i = 0; i < 4; ++i) b[at + offset + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
      return writeFile(QStringLiteral("patched.zip"), b);
    }
    ADD_FAILURE() << "no directory record for " << entry;
    return QString();
  };
  const auto message = [](const QString& path) {
    return test::messageOf<CheckpointError>([&] { readZipEntries(path); });
  };
  const std::string deflated = message(patched("deflated.bin", 24, 3900000000u));
  EXPECT_HAS(deflated, "deflated.bin: declares 3900000000 bytes uncompressed from");
  EXPECT_HAS(deflated, "more than deflate can hold");
  const std::string stored = message(patched("stored.bin", 24, 3900000000u));
  EXPECT_HAS(stored, "stored.bin: declares 3900000000 bytes uncompressed from 5 compressed");
  EXPECT_HAS(stored, "stored uncompressed");
  const std::string compressed = message(patched("deflated.bin", 20, 3900000000u));
  EXPECT_HAS(compressed, "deflated.bin: declares 3900000000 compressed bytes");
  EXPECT_HAS(compressed, "-byte file holds");
}

TEST_F(CheckpointErrors, FlippedBytesInsideAnEntry) {
  // The model entry is stored uncompressed: its bytes sit in the zip as they are.
  const QByteArray model = readZipEntries(m_good).at("model.safetensors");
  const qsizetype at = m_bytes.indexOf(model);
  ASSERT_GT(at, 0);
  for (qsizetype offset : {qsizetype(3), qsizetype(40), model.size() / 2, model.size() - 1}) {
    QByteArray bad = m_bytes;
    bad[at + offset] = static_cast<char>(bad[at + offset] ^ 0x5A);
    expectRefused(writeFile("flip.zip", bad), {"model.safetensors", "CRC-32"});
  }
  // Anywhere in the file: still refused (or, for bytes no reader checks, loaded unchanged).
  Trainer ref(spiralsConfig());
  loadCheckpoint(ref, m_good);
  const auto good = stateBytes(ref);
  for (qsizetype pos = 0; pos < m_bytes.size(); pos += 97) {
    QByteArray bad = m_bytes;
    bad[pos] = static_cast<char>(bad[pos] ^ 0xFF);
    const QString path = writeFile("flip.zip", bad);
    Trainer t(spiralsConfig());
    const auto fresh = stateBytes(t);
    try {
      loadCheckpoint(t, path);
      EXPECT_EQ(stateBytes(t), good) << "flip at " << pos << " loaded different state";
    } catch (const CheckpointError&) {
      EXPECT_EQ(stateBytes(t), fresh) << "flip at " << pos << " changed the trainer";
    }
  }
}

TEST_F(CheckpointErrors, HashMismatch) {
  QByteArray model = readZipEntries(m_good).at("model.safetensors");
  model[model.size() - 1] = static_cast<char>(model[model.size() - 1] ^ 1);  // a valid file, other values
  expectRefused(rewritten("hash.zip", {{"model.safetensors", model}}), {"model.safetensors", "SHA-256 mismatch"});
  expectRefused(rewritten("hash2.zip", {{"metrics.jsonl", "{}\n"}}), {"metrics.jsonl", "manifest.json lists"});
  EXPECT_THROW(checkpointMetrics(m_dir.filePath("hash2.zip")), CheckpointError);
}

TEST_F(CheckpointErrors, UnknownFormatVersion) {
  QJsonObject m = QJsonDocument::fromJson(readZipEntries(m_good).at("manifest.json")).object();
  m["format_version"] = 2;
  const QString path = rewritten("v2.zip", {{"manifest.json", QJsonDocument(m).toJson()}});
  expectRefused(path, {"manifest.json", "unknown format version 2"});
  EXPECT_THROW(readCheckpointInfo(path), CheckpointError);
  m.remove("step");
  m["format_version"] = 1;
  expectRefused(rewritten("nostep.zip", {{"manifest.json", QJsonDocument(m).toJson()}}),
                {"manifest.json", "missing \"step\""});
  expectRefused(rewritten("badjson.zip", {{"manifest.json", "{ not json"}}), {"manifest.json", "not valid JSON"});
}

TEST_F(CheckpointErrors, MissingEntries) {
  for (const char* e : {"model.safetensors", "optimizer.safetensors", "scaler.json", "metrics.jsonl"})
    expectRefused(rewritten("missing.zip", {{e, QByteArray()}}), {e, "missing entry"});
  expectRefused(rewritten("nomanifest.zip", {{"manifest.json", QByteArray()}}), {"manifest.json", "missing entry"});
}

TEST_F(CheckpointErrors, MalformedSafetensorsWithAMatchingHash) {
  const QByteArray junk("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":", 13);
  expectRefused(rewritten("junk.zip", {{"model.safetensors", junk},
                                       {"manifest.json", manifestWithDigest("model.safetensors", junk)}}),
                {"model.safetensors", "header length 16 runs past the end"});
  const QByteArray opt = writeSafetensors({{"0.weight.exp_avg", DType::F32, {3}, QByteArray(12, 0)}});
  expectRefused(rewritten("opt.zip", {{"optimizer.safetensors", opt},
                                      {"manifest.json", manifestWithDigest("optimizer.safetensors", opt)}}),
                {"optimizer.safetensors", "0.weight.exp_avg", "expected F32 (32, 2)"});
  const QByteArray scaler = R"({"scale": 1024, "growth_factor": 0.5, "backoff_factor": 0.5,
      "growth_interval": 3, "_growth_tracker": 0})";
  expectRefused(rewritten("scaler.zip", {{"scaler.json", scaler},
                                         {"manifest.json", manifestWithDigest("scaler.json", scaler)}}),
                {"scaler.json", "growth_factor"});
}

TEST_F(CheckpointErrors, CheckpointOfAnotherModel) {
  RunConfig narrow = spiralsConfig();
  applyOverride(narrow, "model.hidden=16,32");
  auto target = std::make_unique<Trainer>(narrow);
  const auto before = stateBytes(*target);
  try {
    loadCheckpoint(*target, m_good);
    FAIL() << "loaded a checkpoint of another model";
  } catch (const CheckpointError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("another model"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0.weight"), std::string::npos) << msg;
  }
  EXPECT_EQ(stateBytes(*target), before);

  RunConfig deeper = spiralsConfig();
  applyOverride(deeper, "model.hidden=32,32,32");
  Trainer deep(deeper);
  EXPECT_THROW(loadCheckpoint(deep, m_good), CheckpointError);
  RunConfig sgd = spiralsConfig();
  applyOverride(sgd, "optimizer.name=sgd");
  Trainer withSgd(sgd);
  EXPECT_THROW(loadCheckpoint(withSgd, m_good), CheckpointError);
  RunConfig fp32 = spiralsConfig();
  applyOverride(fp32, "amp.mode=fp32");
  Trainer noScaler(fp32);
  EXPECT_THROW(loadCheckpoint(noScaler, m_good), CheckpointError);
  RunConfig pure = spiralsConfig();
  applyOverride(pure, "amp.mode=pure_fp16");
  Trainer halfWeights(pure);
  EXPECT_THROW(loadCheckpoint(halfWeights, m_good), CheckpointError);
}

TEST_F(CheckpointErrors, SavingReplacesAtomically) {
  // Saving over an existing checkpoint replaces it whole; a save that cannot happen leaves it.
  Trainer t(spiralsConfig());
  saveCheckpoint(t, m_good, {});
  EXPECT_EQ(readCheckpointInfo(m_good).step, 0);
  writeFile("blocker", "a file where a folder should be");
  EXPECT_THROW(saveCheckpoint(t, m_dir.filePath("blocker/c.zip"), {}), CheckpointError);
  EXPECT_EQ(QDir(m_dir.path()).entryList({"*.zip*"}, QDir::Files | QDir::Hidden).size(), 1);
}

}  // namespace
}  // namespace amp
