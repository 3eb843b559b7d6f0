// Weights-only exports (export --weights): every parameter and buffer under its state_dict key,
// float tensors rounded to the asked dtype exactly as numpy rounds fp32 to fp16 and as the
// standard round-to-nearest-even formula gives bf16, integer buffers untouched, read back by an
// independent reader (numpy); where PyTorch is installed, loaded into the PyTorch peer's
// ResNet-20 with load_state_dict(strict=True). Plus the model-file sizes the tables report.
#include <gtest/gtest.h>

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include "engine/config/config_schema.h"
#include "engine/io/checkpoint.h"
#include "engine/io/model_files.h"
#include "engine/io/weights_export.h"
#include "engine/train/trainer.h"
#include "test_support.h"

using namespace amp;

namespace {

RunConfig resnet20(const std::string& mode) {
  RunConfig c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "resnet"}, {"model.depth", "20"}, {"data.name", "fmnist"},
           // One step at batch 8 (the momentum buffers exist: what the checkpoint adds; the sizes
           // do not depend on how far it trained) and a test set of 64: the 10,000 images of the
           // whole test set made this CI's slowest test (data.subset cuts only the training set).
           {"data.subset", "64"}, {"data.test_subset", "64"}, {"train.batch_size", "8"}, {"train.steps", "1"},
           {"optimizer.name", "sgd"}, {"optimizer.lr", "0.1"}, {"optimizer.momentum", "0.9"},
           {"train.histogram_every", "0"}, {"train.eval_every", "0"}, {"amp.mode", mode}})
    setConfigValue(c, k, v);
  return c;
}

bool pythonHas(const char* module) {
  QProcess probe;
  probe.start(AMP_PYTHON, {"-c", QString("import ") + module});
  return probe.waitForFinished(60000) && probe.exitStatus() == QProcess::NormalExit && probe.exitCode() == 0;
}

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
  QFile f(dir.filePath(name));
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(bytes);
  return f.fileName();
}

std::string runPython(const char* script, const QStringList& args) {
  QProcess py;
  py.start(AMP_PYTHON, QStringList{"-c", script} + args);
  EXPECT_TRUE(py.waitForFinished(120000));
  EXPECT_EQ(py.exitCode(), 0) << py.readAllStandardError().toStdString();
  return py.readAllStandardOutput().trimmed().toStdString();
}

}  // namespace

TEST(WeightsExport, Fp16AndBf16RoundAsNumpyAndTheStandardFormula) {
  if (!pythonHas("numpy")) GTEST_SKIP() << "python3 with numpy is not available";
  Trainer t(resnet20("fp32"));
  while (!t.finished()) t.step();
  const auto tensors = modelTensors(t);
  QTemporaryDir dir;
  const QString f32 = writeFile(dir, "w32.safetensors", exportWeights(tensors, DType::F32, "test"));
  const QString f16 = writeFile(dir, "w16.safetensors", exportWeights(tensors, DType::F16, "test"));
  const QString b16 = writeFile(dir, "b16.safetensors", exportWeights(tensors, DType::BF16, "test"));
  // numpy reads all three; fp16 must equal numpy's own fp32 -> fp16 cast bit for bit, bf16 the
  // round-to-nearest-even of the fp32 bits ((u + 0x7FFF + ((u >> 16) & 1)) >> 16); integer
  // buffers are the fp32 file's. Prints one summary line.
  const char* script = R"(
import json, struct, sys
import numpy as np
def read(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n]); meta = h.pop('__metadata__')
    out = {}
    for k, e in h.items():
        s, t = e['data_offsets']
        dt = {'F32': '<f4', 'F16': '<f2', 'BF16': '<u2', 'I32': '<i4'}[e['dtype']]
        out[k] = (e['dtype'], np.frombuffer(b[8 + n + s:8 + n + t], dtype=dt).reshape(e['shape']))
    return out, meta
w32, m32 = read(sys.argv[1]); w16, m16 = read(sys.argv[2]); b16, mb = read(sys.argv[3])
assert set(w32) == set(w16) == set(b16), 'keys differ'
assert (m16['dtype'], mb['dtype'], m16['format']) == ('fp16', 'bf16', 'pt'), (m16, mb)
floats = ints = 0
for k, (dt, a) in w32.items():
    if dt == 'I32':
        assert w16[k][0] == 'I32' and np.array_equal(w16[k][1], a) and np.array_equal(b16[k][1], a), k
        ints += 1
        continue
    assert dt == 'F32' and w16[k][0] == 'F16' and b16[k][0] == 'BF16', k
    assert w16[k][1].shape == a.shape, k
    assert np.array_equal(w16[k][1].view('<u2'), a.astype(np.float16).view('<u2')), k + ' fp16'
    u = a.view('<u4').astype(np.uint64)
    rne = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype('<u2')
    assert np.array_equal(b16[k][1], rne), k + ' bf16'
    floats += 1
print(floats, ints)
)";
  const std::string out = runPython(script, {f32, f16, b16});
  // ResNet-20: 65 parameters (19 + 2 convolutions, 21 batch norms x 2, fc x 2) and 21 batch
  // norms x 2 running statistics are float; 21 num_batches_tracked are integer.
  EXPECT_EQ(out, "107 21");
}

TEST(WeightsExport, PyTorchLoadsItIntoThePeersResNet20) {
  if (!pythonHas("torch")) GTEST_SKIP() << "PyTorch (python3-torch) is not installed";
  Trainer t(resnet20("bf16"));
  while (!t.finished()) t.step();
  QTemporaryDir dir;
  const QString path = writeFile(dir, "w.safetensors", exportWeights(modelTensors(t), DType::F16, "test"));
  // The peer's module (../shared/peers/pytorch_resnet.py), strict loading: every key and shape
  // must match. Its eval-mode output on one input, printed for a sanity check on scale.
  const char* script = R"(
import json, struct, sys, torch, torch.nn as nn, torch.nn.functional as F
class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
class ResNet20(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        layers, c = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                layers.append(Block(c, cout, stride if i == 0 else 1)); c = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, 10)
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); h.pop('__metadata__')
dt = {'F16': torch.float16, 'I32': torch.int32}
sd = {k: torch.frombuffer(bytearray(b[8 + n + e['data_offsets'][0]:8 + n + e['data_offsets'][1]]),
                          dtype=dt[e['dtype']]).reshape(e['shape']) for k, e in h.items()}
net = ResNet20().half()
print(net.load_state_dict(sd, strict=True))
)";
  EXPECT_EQ(runPython(script, {path}), "<All keys matched successfully>");
}

TEST(WeightsExport, IntegerTargetsAndOverflowsAreReported) {
  std::vector<SafeTensor> tensors{{"w", DType::F32, {2}, QByteArray(8, 0)}};
  const float big[2] = {70000.f, 1e-9f};
  tensors[0].data = QByteArray(reinterpret_cast<const char*>(big), 8);
  EXPECT_HAS(test::messageOf<SafetensorsError>([&] { exportWeights(tensors, DType::I32, ""); }),
             "not a float dtype");
  const ExportRounding r = exportRounding(tensors, DType::F16);
  EXPECT_EQ(r.overflowed, 1) << "70000 is beyond fp16's 65504";
  EXPECT_EQ(r.flushed, 1) << "1e-9 is below fp16's smallest subnormal";
  EXPECT_EQ(r.firstOverflow, "w");
  EXPECT_EQ(exportRounding(tensors, DType::BF16).overflowed, 0) << "bf16 has fp32's range";
}

TEST(WeightsExport, AmpHalvesTheWeightsFileButNotTheCheckpoint) {
  QTemporaryDir dir;
  std::map<std::string, ModelFileSizes> sizes;
  for (const char* mode : {"fp32", "fp16"}) {
    Trainer t(resnet20(mode));
    while (!t.finished()) t.step();
    sizes[mode] = measureModelFiles(t, QString());
    // Against a checkpoint written the usual way: the same size.
    const QString path = dir.filePath(QString(mode) + ".zip");
    saveCheckpoint(t, path, {});
    EXPECT_EQ(measureModelFiles(t, path).checkpointBytes, sizes[mode].checkpointBytes);
  }
  EXPECT_EQ(sizes["fp32"].weightsDtype, "fp32");
  EXPECT_EQ(sizes["fp16"].weightsDtype, "fp16");
  const double file = double(sizes["fp16"].weightsBytes) / double(sizes["fp32"].weightsBytes);
  const double ckpt = double(sizes["fp16"].checkpointBytes) / double(sizes["fp32"].checkpointBytes);
  EXPECT_NEAR(file, 0.5, 0.02) << "16-bit values, plus the same header and integer buffers";
  EXPECT_NEAR(ckpt, 1.0, 0.02) << "fp32 masters and momentum either way";
  // 272,186 parameters + 2 x 784 running statistics (fp32: 4 bytes each), then the JSON header
  // and 21 int32 batch counts.
  EXPECT_GT(sizes["fp32"].weightsBytes, 4 * (272186 + 1568));
  EXPECT_LT(sizes["fp32"].weightsBytes, 4 * (272186 + 1568) + 20000);
}
