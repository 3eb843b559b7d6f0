// A lesson's result in large type above the charts: the verdict and the lesson's name, the claim
// in plain words, one finding per run (marked in the run's colour, as in the charts), the
// criterion the verdict was measured against, and a note where this machine's numbers need one.
// It replaces the last event-log line in small monospace as the place a class reads the outcome;
// the fonts follow the application's (so presentation scale enlarges them too).
#pragma once

#include <QWidget>

#include "ui/lesson_result.h"

class QFrame;
class QLabel;
class QScrollArea;
class QToolButton;

namespace amp::ui {

class LessonResultView : public QWidget {
  Q_OBJECT

 public:
  explicit LessonResultView(QWidget* parent = nullptr);

  void showResult(const LessonResult& result);  // shows the panel
  void clearResult();                           // hides it
  const LessonResult& result() const { return m_result; }
  void themeChanged();  // the verdict's colours are the palette's
  // The height it asks for at most (the window sets a share of the centre), and `room`, the most
  // it may take so that every line of the result is on screen (the centre less the charts'
  // minimum). Where the whole card is taller than the share, the lesson's title and claim (its
  // own text) give way to the headline's tooltip and the card takes what the rest needs, up to
  // the room:
  // at 1024x640 x1.5 the runs' lines, criterion and note had to be scrolled to (issue 42).
  // Beyond the room the text scrolls. It can shrink to its headline.
  void setHeightCap(int pixels, int room = -1);
  bool isCompact() const { return m_compact; }  // the claim given way
  // The height all of its lines take at its present width (and compactness): more than it was
  // given means the window has to find room, or the text scrolls.
  int wholeHeight() const { return cardHeight(std::max(200, width() - 2)); }
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

  // Sizes against the application font: the headline is what the back row must read.
  static constexpr double kHeadlineScale = 1.5, kClaimScale = 1.2, kFindingScale = 1.1;
  static constexpr double kCompactDetailScale = 0.9;  // the criterion and note, compact
  QLabel* headlineLabel() const { return m_headline; }
  QLabel* claimLabel() const { return m_claim; }
  QLabel* findingsLabel() const { return m_findings; }
  QLabel* criterionLabel() const { return m_criterion; }
  QLabel* noteLabel() const { return m_note; }

 signals:
  void chartRequested(const QString& chart);  // "Show the chart": the one that proves the claim
  void dismissed();

 protected:
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void applyFonts();
  void fitHeight();
  void updateShowChartText();  // its short form in a narrow card
  void render();
  QColor verdictColor() const;

  LessonResult m_result;
  QFrame* m_card;
  int m_heightCap = 0;  // set by the window before the first result shows
  int m_room = -1;      // -1: no more than the cap
  bool m_compact = false;
  int cardHeight(int width) const;  // all of its text at `width`, as it is now
  void applyCompact();              // the headline, the claim and the tooltip for m_compact
  QLabel* m_headline;
  QLabel* m_claim;
  QLabel* m_findings;
  QLabel* m_criterion;
  QLabel* m_note;
  QToolButton* m_showChart;
  QToolButton* m_close;
  bool m_applyingFonts = false;
};

}  // namespace amp::ui
