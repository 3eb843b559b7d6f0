#include "ui/speed_control.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <algorithm>
#include <array>
#include <cmath>

namespace amp::ui {

namespace {
// The slider's positions; the last one is full speed (0).
constexpr std::array<double, 12> kPaces = {1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 0};
constexpr int kFull = int(kPaces.size()) - 1;

// The pace beside the slider, as wide as its longest text in the font it has now: a width fixed
// when it was made cut "full speed" to "full spee" once presentation scale enlarged the font.
class PaceLabel : public QLabel {
 public:
  using QLabel::QLabel;
  QSize sizeHint() const override {
    const QFontMetrics fm = fontMetrics();
    const int w = std::max(fm.horizontalAdvance(SpeedControl::paceText(500)), fm.horizontalAdvance(SpeedControl::paceText(0)));
    return {w + 6 + contentsMargins().left() + contentsMargins().right(), QLabel::sizeHint().height()};
  }
  QSize minimumSizeHint() const override { return sizeHint(); }
};

int positionOf(double stepsPerSecond) {
  if (stepsPerSecond <= 0) return kFull;
  int best = 0;
  for (int i = 1; i < kFull; ++i)
    if (std::abs(std::log(kPaces[i] / stepsPerSecond)) < std::abs(std::log(kPaces[best] / stepsPerSecond)))
      best = i;
  return best;
}
}  // namespace

SpeedControl::SpeedControl(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("speedControl"));
  m_slider = new QSlider(Qt::Horizontal, this);
  m_slider->setRange(0, kFull);
  m_slider->setValue(kFull);
  m_slider->setPageStep(1);
  m_slider->setFixedWidth(110);
  m_slider->setToolTip(tr("Steps per second of every active run: slow a lesson down to talk "
                          "over it, or let it run at full speed"));
  // Wide enough for the longest text, so the tool bar does not shift while dragging.
  m_label = new PaceLabel(paceText(0), this);
  m_label->setObjectName(QStringLiteral("paceLabel"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  layout->addWidget(new QLabel(tr("Speed"), this));
  layout->addWidget(m_slider);
  layout->addWidget(m_label);
  connect(m_slider, &QSlider::valueChanged, this, [this](int position) {
    m_label->setText(paceText(kPaces[position]));
    emit stepsPerSecondChanged(kPaces[position]);
  });
}

double SpeedControl::stepsPerSecond() const { return kPaces[m_slider->value()]; }

void SpeedControl::setStepsPerSecond(double stepsPerSecond) {
  m_slider->setValue(positionOf(stepsPerSecond));
}

QString SpeedControl::paceText(double stepsPerSecond) {
  return stepsPerSecond <= 0 ? tr("full speed") : tr("%1 steps/s").arg(stepsPerSecond);
}

}  // namespace amp::ui
