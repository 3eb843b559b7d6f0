#include "ui/charts/decision_chart.h"

#include <QChart>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "engine/train/decision_map.h"
#include "ui/charts/heat_map_item.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {
constexpr int kMaxPointsPerClass = 1500;  // a scatter of a few thousand points stays fluid
}

DecisionChart::DecisionChart(QWidget* parent) : ChartPanel(QStringLiteral("data"), parent) {
  m_view->setTitle(tr("Data and decision regions"));
  m_view->setAxisTitles(tr("x₁"), tr("x₂"));
  m_view->setInteractive(false);  // the plane is the data's: a fixed square
  m_view->setHoverTextProvider([this](const QPointF& v) { return hoverText(v); });
  m_runBox = new QComboBox(this);
  m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_runBox->setToolTip(tr("Whose model's regions to draw (runs of 2-D classification data)"));
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Run"), this));
  controls->addWidget(m_runBox);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 2, 0, 2);
  layout->setSpacing(2);
  layout->addLayout(controls);
  layout->addWidget(m_view, 1);
  connect(m_runBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedRun(m_runBox->itemData(i).toInt()); });
  connect(m_view->chart(), &QChart::plotAreaChanged, this, [this] {
    if (m_regions) m_regions->geometryChanged();
  });
}

QColor DecisionChart::classColor(int k) {
  static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xf5, 0x7c, 0x00), QColor(0x2c, 0xa0, 0x2c),
                                  QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b)};
  return colors[((k % 6) + 6) % 6];
}

QImage DecisionChart::regionImage(const DecisionMap& map, const QColor& background) {
  QImage image(std::max(1, map.width), std::max(1, map.height), QImage::Format_ARGB32);
  image.fill(background);
  const double chance = 1.0 / std::max(2, map.classes);
  for (int row = 0; row < map.height; ++row)
    for (int col = 0; col < map.width; ++col) {
      const std::size_t i = std::size_t(row) * std::size_t(map.width) + std::size_t(col);
      if (i >= map.cls.size()) continue;
      // A guess (probability near chance) stays pale; a sure class is a clear tint.
      const double sure = std::clamp((double(map.confidence[i]) - chance) / (1.0 - chance), 0.0, 1.0);
      const double a = 0.08 + 0.5 * sure;
      const QColor c = classColor(map.cls[i]);
      image.setPixelColor(col, row,
                          QColor::fromRgbF(float(background.redF() * (1 - a) + c.redF() * a),
                                           float(background.greenF() * (1 - a) + c.greenF() * a),
                                           float(background.blueF() * (1 - a) + c.blueF() * a)));
    }
  return image;
}

void DecisionChart::setSelectedRun(int runId) {
  if (runId == m_selectedId) return;
  m_selectedId = runId;
  const QSignalBlocker block(m_runBox);
  m_runBox->setCurrentIndex(std::max(0, m_runBox->findData(runId)));
  refreshNow();  // the new run's map and points differ from those drawn: both are redrawn
}

const RunData* DecisionChart::shownRun() const {
  const QVector<const RunData*> runs = visibleRuns();
  for (const RunData* r : runs)
    if (r->id == m_selectedId && r->decisionMap) return r;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    if ((*it)->decisionMap) return *it;
  return nullptr;
}

void DecisionChart::rebuildSeries() {
  {
    const QSignalBlocker block(m_runBox);
    m_runBox->clear();
    // Every run, as the other panels' pickers: a run of other data gets the placeholder's reason.
    for (const RunData* r : visibleRuns()) m_runBox->addItem(r->name, r->id);
  }
  m_points.clear();
  m_drawn.reset();
  m_drawnPoints = nullptr;
  addClassSeries(2);  // two classes first; more when a map has them
  delete m_regions;
  m_regions = new HeatMapItem(m_view->chart(), m_points.front());
}

void DecisionChart::updateSeries() {
  const RunData* run = shownRun();
  {
    const QSignalBlocker block(m_runBox);
    if (run) m_runBox->setCurrentIndex(std::max(0, m_runBox->findData(run->id)));
  }
  const std::shared_ptr<const DecisionMap> map = run ? run->decisionMap : nullptr;
  if (!map || map->width == 0) {
    m_view->setPlaceholder(tr("Decision regions are drawn for 2-D classification data (spirals, circles, "
                              "blobs) while a run trains"));
    m_regions->setImage(QImage(), {});
    for (QScatterSeries* s : m_points) s->clear();
    m_drawn.reset();
    m_drawnPoints = nullptr;
    m_view->setTitle(tr("Data and decision regions"));
    return;
  }
  m_view->setPlaceholder({});
  const int classes = std::max(2, map->classes);
  addClassSeries(classes);
  const bool dark = m_view->theme() == ChartView::Theme::Dark;
  if (map->points && (map->points.get() != m_drawnPoints || dark != m_drawnDark)) {
    m_drawnPoints = map->points.get();
    std::vector<QList<QPointF>> byClass(std::size_t(m_points.size()));
    const std::vector<float>& xy = *map->points;
    for (std::size_t i = 0; i < map->labels->size() && 2 * i + 1 < xy.size(); ++i) {
      const int k = (*map->labels)[i];
      if (k < 0 || k >= m_points.size() || byClass[std::size_t(k)].size() >= kMaxPointsPerClass) continue;
      byClass[std::size_t(k)].append(QPointF(xy[2 * i], xy[2 * i + 1]));
    }
    for (int k = 0; k < m_points.size(); ++k) {
      QScatterSeries* s = m_points[k];
      const QColor c = classColor(k);
      s->setMarkerSize(6 * std::max(1.0, m_view->presentationScale()));
      s->setColor(c);
      s->setBorderColor(dark ? c.lighter(150) : c.darker(160));
      s->replace(byClass[std::size_t(k)]);
    }
  }
  if (map != m_drawn || dark != m_drawnDark) {
    m_drawn = map;
    m_drawnDark = dark;
    m_regions->setImage(regionImage(*map, m_view->backgroundColor()),
                        QRectF(QPointF(map->xMin, map->yMax), QPointF(map->xMax, map->yMin)));
  }
  m_view->setTitle(tr("Decision regions of %1 at step %2").arg(run->name).arg(map->step));
  // Round ticks (0.5 apart) around the map's plane; "%g", not the step axis' whole numbers.
  QValueAxis* x = m_view->xAxis();
  QValueAxis* y = m_view->yAxis();
  x->setLabelFormat(QStringLiteral("%g"));
  y->setLabelFormat(QStringLiteral("%g"));
  if (map != m_rangedFor) {
    m_rangedFor = map;
    m_view->setNiceRange(x, map->xMin, map->xMax);
    m_view->setNiceRange(y, map->yMin, map->yMax);
  }
  m_regions->geometryChanged();
  QList<LegendEntry> keys;
  for (int k = 0; k < classes; ++k)
    keys << LegendEntry{tr("class %1").arg(k), classColor(k), Qt::SolidLine, LegendEntry::Glyph::Dot};
  keys << LegendEntry{tr("shade: the model's class and confidence"), QColor(0x90, 0x90, 0x90), Qt::SolidLine,
                      LegendEntry::Glyph::Line};
  m_view->setRunLegend({}, keys);
}

void DecisionChart::addClassSeries(int classes) {
  while (m_points.size() < classes) {
    auto* s = new QScatterSeries;
    s->setName(tr("class %1").arg(m_points.size()));
    s->setProperty("ampNoHover", true);
    m_view->addSeries(s);
    m_points << s;
  }
}

QString DecisionChart::hoverText(const QPointF& v) const {
  if (!m_drawn || m_drawn->width == 0) return {};
  const DecisionMap& map = *m_drawn;
  const int col = int(std::floor((v.x() - map.xMin) / (map.xMax - map.xMin) * map.width));
  const int row = int(std::floor((map.yMax - v.y()) / (map.yMax - map.yMin) * map.height));
  if (col < 0 || row < 0 || col >= map.width || row >= map.height) return {};
  const std::size_t i = std::size_t(row) * std::size_t(map.width) + std::size_t(col);
  return tr("<b>class %1</b> (%2%)<br/>x₁ %3, x₂ %4")
      .arg(map.cls[i])
      .arg(double(map.confidence[i]) * 100.0, 0, 'f', 1)
      .arg(double(map.cellX(col)), 0, 'g', 3)
      .arg(double(map.cellY(row)), 0, 'g', 3);
}

}  // namespace amp::ui
