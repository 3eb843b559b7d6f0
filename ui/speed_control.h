// The demo's pace: a slider from 1 step per second up to full speed, with its value beside it.
// A teacher slows a lesson down to talk over it and speeds it up again; the runs follow at
// once (RunController::setStepsPerSecond). Steps are logarithmic, since 1 -> 2 steps/s matters
// as much as 100 -> 200.
#pragma once

#include <QWidget>

class QLabel;
class QSlider;

namespace amp::ui {

class SpeedControl : public QWidget {
  Q_OBJECT

 public:
  explicit SpeedControl(QWidget* parent = nullptr);
  // 0: full speed. Other values snap to the nearest slider position.
  double stepsPerSecond() const;
  void setStepsPerSecond(double stepsPerSecond);
  QSlider* slider() const { return m_slider; }
  static QString paceText(double stepsPerSecond);  // "20 steps/s", "full speed"

 signals:
  void stepsPerSecondChanged(double stepsPerSecond);  // 0: full speed

 private:
  QSlider* m_slider = nullptr;
  QLabel* m_label = nullptr;
};

}  // namespace amp::ui
