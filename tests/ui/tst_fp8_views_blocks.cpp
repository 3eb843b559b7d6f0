// The fp8 block scales view (issue 39) against a grid the engine made from a tensor with one
// outlier (engine/amp/fp8_block_grid.h), and the scale codes the quantiser itself writes:
// - the scale map is the tensor's shape (rows down, block columns across; a 6 x 96 tensor in
//   1 x 32 blocks is 6 x 3 cells, a transposed map 3 x 6), every cell the exponent of its own
//   block (quantizeToCodes's E8M0 code - 127) in its colour on the bar, the outlier's cell the
//   largest amax and the largest exponent;
// - hovering the outlier's cell names its block, its rows and columns in the tensor, the scale
//   2^e and the amax;
// - the tensor, step and run pickers: block recipes' runs only (a per-tensor run focused falls
//   back to one that has grids), the spiked tensor at the spike's step first;
// - it is a dashboard tab, "fp8-blocks", exported as PNG, SVG and PDF with both maps in colour.
#include <QApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "engine/amp/fp8_block_grid.h"
#include "engine/amp/fp8_quantize.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/fp8_block_scales.h"
#include "ui/charts/heat_map_item.h"
#include "ui/run_data.h"

using namespace amp;
using namespace amp::ui;

namespace {

constexpr int kRows = 6, kCols = 96;  // 1 x 32 blocks: 6 x 3 cells
constexpr int kOutRow = 4, kOutCol = 70;  // block (4, 2)

// Small values that differ per block (so a wrong cell shows), one outlier.
std::vector<float> tensor(float outlier) {
  std::vector<float> v(std::size_t(kRows * kCols));
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) v[std::size_t(r * kCols + c)] = std::ldexp(1.0f + 0.01f * float(c % 32), -(r + 3 * (c / 32)));
  v[std::size_t(kOutRow * kCols + kOutCol)] = outlier;
  return v;
}

QuantSpec mxSpec() {
  QuantSpec s;
  s.scaling = QuantScaling::Mx;
  s.block = 32;
  return s;
}

RunData run(int id, const QString& name, const char* recipe, bool grids) {
  RunData r;
  r.id = id;
  r.name = name;
  r.config.mode = PrecisionMode::Fp8;
  r.config.fp8.recipe = recipe;
  r.config.fp8.injectSpike = "3:fc2.x:100000";
  for (int s = 1; s <= 4; ++s) {
    StepMetrics m;
    m.step = s;
    m.loss = 1;
    for (const char* t : {"fc1.x", "fc1.w", "fc2.x", "fc2.w"}) {
      Fp8TensorRecord rec;
      rec.tensor = t;
      rec.format = "e4m3";
      rec.count = kRows * kCols;
      rec.amax = 1;
      const bool spiked = s == 3 && std::string(t) == "fc2.x";
      if (grids && s % 2 == 1) {  // histogram steps 1 and 3
        const std::vector<float> v = tensor(spiked ? 5000.0f : 0.5f);
        rec.blockGrid = fp8BlockGrid(v.data(), kRows, kCols, mxSpec());
      }
      m.fp8.push_back(rec);
    }
    r.append(m);
  }
  return r;
}

}  // namespace

class TestFp8BlockScales : public QObject {
  Q_OBJECT

 private slots:
  void mapsAreTheTensorsBlocksWithTheQuantisersExponents() {
    RunData perTensor = run(1, QStringLiteral("per_tensor"), "current", false);
    RunData mx = run(2, QStringLiteral("mxfp8"), "mxfp8", true);
    Fp8BlockScalesPanel panel;
    panel.resize(1000, 420);
    panel.setRuns({&mx, &perTensor});
    panel.setSelectedRun(1);  // the lesson focuses the per-tensor run: it has no grids
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.refreshNow();
    QCOMPARE(panel.runName(), QStringLiteral("mxfp8"));
    QCOMPARE(panel.tensors(), (QStringList{QStringLiteral("fc1.x"), QStringLiteral("fc1.w"), QStringLiteral("fc2.x"),
                                           QStringLiteral("fc2.w")}));
    QCOMPARE(panel.selectedTensor(), QStringLiteral("fc2.x"));  // the spiked tensor, at the spike's step
    QCOMPARE(panel.steps(), (QVector<long long>{1, 3}));
    QCOMPARE(panel.selectedStep(), 3LL);
    QVERIFY(panel.grid());

    // The quantiser's own scales for the same values.
    const std::vector<float> v = tensor(5000.0f);
    std::vector<std::uint8_t> codes(v.size()), scales(6 * 3);
    float tensorScale = 0;
    quantizeToCodes(v.data(), kRows, kCols, mxSpec(), codes.data(), scales.data(), nullptr, &tensorScale, nullptr);
    const QImage image = panel.image(Fp8BlockScalesPanel::Map::Scale);
    QCOMPARE(image.size(), QSize(3, 6));  // 3 block columns across, 6 rows down
    const auto [lo, hi] = panel.colourRange(Fp8BlockScalesPanel::Map::Scale);
    double largestAmax = -1e9;
    QPoint largestAt;
    for (int row = 0; row < 6; ++row)
      for (int col = 0; col < 3; ++col) {
        const double want = int(scales[std::size_t(row * 3 + col)]) - 127;
        QCOMPARE(panel.cellValue(Fp8BlockScalesPanel::Map::Scale, row, col), want);
        const QColor c = image.pixelColor(col, row), e = heatColor((want - lo) / (hi - lo));
        QVERIFY2(std::abs(c.red() - e.red()) <= 1 && std::abs(c.green() - e.green()) <= 1 && std::abs(c.blue() - e.blue()) <= 1,
                 qPrintable(QStringLiteral("pixel row %1 col %2").arg(row).arg(col)));
        const double a = panel.cellValue(Fp8BlockScalesPanel::Map::Amax, row, col);
        if (a > largestAmax) largestAmax = a, largestAt = QPoint(col, row);
      }
    QCOMPARE(largestAt, QPoint(2, 4));  // the outlier's block
    QCOMPARE(largestAmax, double(std::log2(5000.0f)));
    QCOMPARE(panel.cellValue(Fp8BlockScalesPanel::Map::Scale, 4, 2), hi);  // its scale tops the bar
    QCOMPARE(hi, 4.0);  // round up to fit: 5000 / 2^4 = 312.5 fits E4M3's 448

    // The hover of the outlier's cell, found by position in the scale map and in the amax map.
    for (const auto map : {Fp8BlockScalesPanel::Map::Scale, Fp8BlockScalesPanel::Map::Amax}) {
      QWidget* canvas = panel.mapWidget();
      QPoint hit(-1, -1);
      for (int y = 0; y < canvas->height() && hit.x() < 0; y += 2)
        for (int x = 0; x < canvas->width(); x += 2)
          if (panel.cellAt(map, QPointF(x, y)) == QPoint(2, 4)) {
            hit = QPoint(x, y);
            break;
          }
      QVERIFY(hit.x() >= 0);
      QTest::mouseMove(canvas, QPoint(1, 1));
      QTest::mouseMove(canvas, hit);
      QTRY_VERIFY(panel.hoverText().contains(QStringLiteral("column 2")));
      const QString hover = panel.hoverText();
      QVERIFY2(hover.contains(QStringLiteral("block row 4, column 2: tensor rows 4, columns 64–95")), qPrintable(hover));
      QVERIFY2(hover.contains(QStringLiteral("scale 2^4 (E8M0 exponent 4")), qPrintable(hover));
      QVERIFY2(hover.contains(QStringLiteral("amax 5000")), qPrintable(hover));
    }

    // Another step: the same tensor without its outlier, a smaller top exponent.
    panel.setSelectedStep(1);
    QCOMPARE(panel.selectedStep(), 1LL);
    QVERIFY(panel.cellValue(Fp8BlockScalesPanel::Map::Scale, 4, 2) < 4.0);
    panel.setSelectedTensor(QStringLiteral("fc1.w"));
    QCOMPARE(panel.selectedTensor(), QStringLiteral("fc1.w"));
    QCOMPARE(panel.selectedStep(), 1LL);  // a chosen step stays while the tensor has it
  }

  void isADashboardTabAndExports() {
    RunData mx = run(2, QStringLiteral("mxfp8"), "mxfp8", true);
    Dashboard d;
    d.resize(1200, 800);
    d.setRuns({&mx});
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    QVERIFY(d.chartNames().contains(QStringLiteral("fp8-blocks")));
    d.showChart(QStringLiteral("fp8-blocks"));
    QTemporaryDir dir;
    for (const char* ext : {"png", "svg", "pdf"}) {
      const QString path = dir.filePath(QStringLiteral("fp8-blocks.") + QLatin1String(ext));
      QString error;
      QVERIFY2(d.exportChart(QStringLiteral("fp8-blocks"), path, {}, QSize(900, 420), 96, &error), qPrintable(error));
      QVERIFY(QFileInfo(path).size() > 1000);
    }
    // The grid as data: a CSV line per cell, rows first (the outlier's block: row 4, column 2,
    // tensor rows 4-4, columns 64-95, exponent 4), and JSON with the fp8 JSON's block_grid.
    Fp8BlockScalesPanel* panel = d.fp8BlockScales();
    const QString csv = dir.filePath(QStringLiteral("grid.csv")), json = dir.filePath(QStringLiteral("grid.json"));
    QString error;
    QVERIFY2(panel->saveGrid(csv, &error), qPrintable(error));
    QVERIFY2(panel->saveGrid(json, &error), qPrintable(error));
    QVERIFY(!panel->saveGrid(dir.filePath(QStringLiteral("grid.txt")), &error));
    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = c.readAll().trimmed().split('\n');
    QCOMPARE(lines.size(), 1 + 6 * 3);
    QVERIFY2(lines[1 + 4 * 3 + 2].startsWith("4,2,4,4,64,95,4,"), lines[1 + 4 * 3 + 2].constData());
    QFile j(json);
    QVERIFY(j.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(j.readAll()).object();
    QCOMPARE(o["tensor"].toString(), QStringLiteral("fc2.x"));
    QCOMPARE(o["step"].toInt(), 3);
    QCOMPARE(o["block_grid"].toObject()["scale_log2"].toArray().at(4 * 3 + 2).toDouble(), 4.0);

    // Both maps in colour: many distinct colours in the exported PNG.
    QImage png(dir.filePath(QStringLiteral("fp8-blocks.png")));
    QSet<QRgb> colours;
    for (int y = 0; y < png.height(); y += 3)
      for (int x = 0; x < png.width(); x += 3) colours.insert(png.pixel(x, y));
    QVERIFY(colours.size() > 10);
  }
};

QTEST_MAIN(TestFp8BlockScales)
#include "tst_fp8_views_blocks.moc"
