#include "ui/lesson_result_view.h"

#include <QEvent>
#include <QResizeEvent>
#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QStyle>
#include <QToolButton>

#include "ui/theme.h"

namespace amp::ui {

namespace {

QLabel* wrappedLabel(QWidget* parent, const QString& name) {
  auto* l = new QLabel(parent);
  l->setObjectName(name);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);  // the numbers are worth copying
  return l;
}

// What the "Show the …" button says for each chart a result can open on; the short form for a
// narrow card (beside the headline the long one wrapped the title onto three lines at 1024x640
// x1.5).
struct ChartButtonText {
  const char* chart;
  const char* full;
  const char* brief;
};
constexpr ChartButtonText kChartButtons[] = {
    {"histogram", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the exponent histogram"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Exponents ▸")},
    {"scale", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the loss scale"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Loss scale ▸")},
    {"accuracy", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the accuracy"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Accuracy ▸")},
    {"throughput", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the throughput"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Throughput ▸")},
    {"memory", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the memory"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Memory ▸")},
    {"updates", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the lost updates"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Lost updates ▸")},
    {"data", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the decision regions"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Data ▸")},
    {"fp8-heat", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the fp8 heat map"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "fp8 heat map ▸")},
    {"fp8-scale", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the fp8 scale timeline"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "fp8 scales ▸")},
    {"fp8-blocks", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the fp8 block scales"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "fp8 blocks ▸")},
    {"loss", QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Show the loss"),
     QT_TRANSLATE_NOOP("amp::ui::LessonResultView", "Loss ▸")},
};

QString chartButtonText(const QString& chart, bool brief) {
  const ChartButtonText* found = &kChartButtons[std::size(kChartButtons) - 1];  // the loss
  for (const ChartButtonText& t : kChartButtons)
    if (chart == QLatin1String(t.chart)) found = &t;
  return LessonResultView::tr(brief ? found->brief : found->full);
}

}  // namespace

LessonResultView::LessonResultView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("lessonResultView"));
  // The card scrolls where the window caps its height (setHeightCap).
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_card = new QFrame(scroll);
  m_card->setObjectName(QStringLiteral("lessonResult"));
  scroll->setWidget(m_card);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(scroll);
  QWidget* card = m_card;
  m_headline = wrappedLabel(card, QStringLiteral("lessonResultHeadline"));
  m_claim = wrappedLabel(card, QStringLiteral("lessonResultClaim"));
  m_findings = wrappedLabel(card, QStringLiteral("lessonResultFindings"));
  m_findings->setTextFormat(Qt::RichText);
  m_criterion = wrappedLabel(card, QStringLiteral("lessonResultCriterion"));
  m_note = wrappedLabel(card, QStringLiteral("lessonResultNote"));
  m_showChart = new QToolButton(card);
  m_showChart->setObjectName(QStringLiteral("lessonResultShowChart"));
  m_showChart->setToolButtonStyle(Qt::ToolButtonTextOnly);
  m_close = new QToolButton(card);
  m_close->setObjectName(QStringLiteral("lessonResultClose"));
  m_close->setAutoRaise(true);
  m_close->setText(QStringLiteral("✕"));
  m_close->setToolTip(tr("Hide the result (it stays in the event log)"));
  connect(m_showChart, &QToolButton::clicked, this, [this] { emit chartRequested(m_result.chart); });
  connect(m_close, &QToolButton::clicked, this, [this] {
    clearResult();
    emit dismissed();
  });

  // A grid, so the word-wrapped labels get their height for the width they are given (a nested
  // box row cut the headline's second line).
  auto* layout = new QGridLayout(card);
  layout->setContentsMargins(12, 4, 6, 6);
  layout->setVerticalSpacing(2);
  layout->addWidget(m_headline, 0, 0);
  layout->addWidget(m_showChart, 0, 1, Qt::AlignTop);
  layout->addWidget(m_close, 0, 2, Qt::AlignTop);
  layout->addWidget(m_claim, 1, 0, 1, 3);
  layout->addWidget(m_findings, 2, 0, 1, 3);
  layout->addWidget(m_criterion, 3, 0, 1, 3);
  layout->addWidget(m_note, 4, 0, 1, 3);
  layout->setColumnStretch(0, 1);
  applyFonts();
  hide();
}

void LessonResultView::showResult(const LessonResult& result) {
  m_result = result;
  render();
  show();
}

void LessonResultView::clearResult() {
  m_result = {};
  setMinimumHeight(0);
  hide();
}

QColor LessonResultView::verdictColor() const {
  const bool dark = currentTheme() == Theme::Dark;
  switch (m_result.verdict) {
    case LessonResult::Verdict::Confirmed: return dark ? QColor(0x7b, 0xc8, 0x7f) : QColor(0x2e, 0x7d, 0x32);
    case LessonResult::Verdict::NotConfirmed: return dark ? QColor(0xef, 0x7a, 0x72) : QColor(0xc6, 0x28, 0x28);
    case LessonResult::Verdict::Inconclusive: break;
  }
  return dark ? QColor(0xf0, 0xb4, 0x4c) : QColor(0xa1, 0x5c, 0x00);
}

void LessonResultView::applyCompact() {
  // The verdict, then the lesson's title; compact: the verdict alone, the title and the claim in
  // the headline's tooltip (the lesson panel shows both too).
  const QColor c = verdictColor();
  const QString mark = m_result.verdict == LessonResult::Verdict::Confirmed      ? QStringLiteral("✔")
                       : m_result.verdict == LessonResult::Verdict::NotConfirmed ? QStringLiteral("✘")
                                                                                 : QStringLiteral("?");
  QString verdict = QStringLiteral("<span style='color:%1'>%2 %3</span>")
                        .arg(c.name(), mark, verdictText(m_result).toHtmlEscaped());
  if (m_compact && m_result.notMeasurable) {
    // "not measurable here" in the criterion's size beside "Inconclusive": one line at 1024x640
    // x1.5, where in the headline's size it wrapped.
    const QFont small = scaledFont(font(), kClaimScale);
    verdict = QStringLiteral("<span style='color:%1'>%2 %3</span><span style='color:%1; font-weight:normal; "
                             "font-size:%4pt'> — %5</span>")
                  .arg(c.name(), mark, verdictName(m_result.verdict).toHtmlEscaped())
                  .arg(small.pointSizeF() > 0 ? small.pointSizeF() : 12.0)
                  .arg(tr("not measurable here"));
  }
  m_headline->setText(m_compact ? verdict : QStringLiteral("%1 — %2").arg(verdict, m_result.title.toHtmlEscaped()));
  m_headline->setToolTip(m_compact ? QStringLiteral("<b>%1</b><br>%2").arg(m_result.title.toHtmlEscaped(),
                                                                            m_result.claim.toHtmlEscaped())
                                   : QString());
  m_claim->setVisible(!m_compact && !m_result.claim.isEmpty());
  // Compact, the runs' lines in the application's font (still the presentation scale's).
  m_applyingFonts = true;
  m_findings->setFont(scaledFont(font(), m_compact ? 1.0 : kFindingScale));
  // The criterion and the note a little smaller still: at x1.5 that is 1.35 times the normal
  // text, and every line on screen reads better than half of them behind a scroll bar.
  m_criterion->setFont(scaledFont(font(), m_compact ? kCompactDetailScale : 1.0));
  m_note->setFont(scaledFont(font(), m_compact ? kCompactDetailScale : 1.0));
  m_applyingFonts = false;
}

void LessonResultView::render() {
  const QColor c = verdictColor();
  m_claim->setText(m_result.claim);
  applyCompact();
  QStringList rows;
  for (const LessonResult::Finding& f : m_result.findings)
    rows << QStringLiteral("<span style='color:%1'>■</span>&nbsp;<b>%2</b>: %3")
                .arg(f.color.name(), f.label.toHtmlEscaped(), f.text.toHtmlEscaped());
  m_findings->setText(rows.join(QStringLiteral("<br>")));
  m_criterion->setText(m_result.criterion.isEmpty() ? QString()
                                                    : tr("Measured against: %1.").arg(m_result.criterion));
  m_criterion->setVisible(!m_result.criterion.isEmpty());
  m_note->setText(m_result.note);
  m_note->setVisible(!m_result.note.isEmpty());
  updateShowChartText();
  m_showChart->setVisible(!m_result.chart.isEmpty());
  fitHeight();
  // The verdict's colour down the left edge: the outcome reads before a word of it does.
  m_card->setStyleSheet(QStringLiteral("QFrame#lessonResult { border: 1px solid palette(mid); border-left: 6px solid %1; "
                               "background: palette(base); }")
                    .arg(c.name()));
}

void LessonResultView::applyFonts() {
  // Children get explicit fonts derived from this widget's own, which follows the application
  // font (presentation scale): re-derived whenever it changes.
  m_applyingFonts = true;
  const QFont base = font();
  auto scaled = [&base](double f, bool bold) {
    QFont out = scaledFont(base, f);
    out.setBold(bold);
    return out;
  };
  m_headline->setFont(scaled(kHeadlineScale, true));
  m_claim->setFont(scaled(kClaimScale, false));
  m_findings->setFont(scaled(m_compact ? 1.0 : kFindingScale, false));
  m_criterion->setFont(scaled(m_compact ? kCompactDetailScale : 1.0, false));
  m_note->setFont(scaled(m_compact ? kCompactDetailScale : 1.0, false));
  m_showChart->setFont(scaled(1.0, false));
  m_close->setFont(scaled(kClaimScale, false));
  m_applyingFonts = false;
}

void LessonResultView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // The text's height depends on the width it wraps at.
  if (event->size().width() != event->oldSize().width()) {
    updateShowChartText();
    fitHeight();
  }
}

void LessonResultView::setHeightCap(int pixels, int room) {
  m_heightCap = pixels;
  m_room = room;
  fitHeight();
}

void LessonResultView::updateShowChartText() {
  const QString full = chartButtonText(m_result.chart, false);
  // Narrow: under 2.5 button widths left for the headline.
  const int fullWidth = m_showChart->fontMetrics().horizontalAdvance(full) + 24;
  const bool narrow = width() < fullWidth * 7 / 2;
  m_showChart->setText(narrow ? chartButtonText(m_result.chart, true) : full);
  m_showChart->setToolTip(full);
}

int LessonResultView::cardHeight(int width) const {
  const int h = m_card->heightForWidth(width);
  return h > 0 ? h : m_card->sizeHint().height();
}

void LessonResultView::fitHeight() {
  // A minimum, not a hint: beside the charts' expanding panels a hint alone left the card a
  // third of the height it asked for. The cap keeps that minimum within the window's room.
  if (m_result.isEmpty()) return;
  const int width = std::max(200, this->width() - 2);
  // Compact where the whole card is taller than the share of the centre: measured in full.
  bool compact = false;
  if (m_heightCap > 0) {
    if (m_compact) {
      m_compact = false;
      applyCompact();
    }
    compact = cardHeight(width) > std::max(m_heightCap, minimumSizeHint().height());
  }
  if (compact != m_compact) {
    m_compact = compact;
    applyCompact();
  }
  const int h = sizeHint().height();
  if (minimumHeight() != h) setMinimumHeight(h);
}

QSize LessonResultView::sizeHint() const {
  // All of the card's text at the width it has now, up to the cap; compact, up to the room.
  // The view's own width (the scroll area's viewport lags behind it while a resize is laid out):
  // a height for a narrower width left gaps between the lines.
  const int width = std::max(200, this->width() - 2);
  const int floor = minimumSizeHint().height();
  const int limit = m_compact ? std::max({m_heightCap, m_room, floor}) : std::max(m_heightCap, floor);
  return {width, std::min(cardHeight(width), limit)};
}

QSize LessonResultView::minimumSizeHint() const {
  return {200, m_headline->fontMetrics().height() + 16};
}

void LessonResultView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::FontChange && !m_applyingFonts) {
    applyFonts();
    fitHeight();
  }
}

void LessonResultView::themeChanged() {
  if (!m_result.isEmpty()) render();
}

}  // namespace amp::ui
