#include "ui/event_log_view.h"

#include <QEvent>
#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QVBoxLayout>

#include "ui/run_data.h"

namespace amp::ui {

namespace {
constexpr int kMaxLines = 20000;  // old lines drop off; RunData::events keeps them all
}

EventLogView::EventLogView(QWidget* parent) : QWidget(parent) {
  m_text = new QPlainTextEdit(this);
  m_text->setReadOnly(true);
  m_text->setMaximumBlockCount(kMaxLines);
  m_text->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  applyFont();
  m_text->setPlaceholderText(tr("Skipped steps, scale changes, divergence and run ends appear here."));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_text);
}

void EventLogView::appendLines(const RunData* run, const QStringList& lines) {
  if (lines.isEmpty()) return;
  // Follow the end only if the reader is already there; otherwise leave their scroll position.
  QScrollBar* bar = m_text->verticalScrollBar();
  const bool atEnd = bar->value() >= bar->maximum() - 2;
  const QString prefix = QStringLiteral("<span style='color:%1'><b>%2</b></span> ")
                             .arg(run->color.name(), run->name.toHtmlEscaped());
  QString html;
  for (const QString& line : lines) {
    if (!html.isEmpty()) html += QStringLiteral("<br>");
    html += prefix + line.toHtmlEscaped();
  }
  m_text->appendHtml(html);
  if (atEnd) bar->setValue(bar->maximum());
}

void EventLogView::applyFont() {
  // Fixed width so the columns of numbers line up, at the application font's size: the system's
  // fixed font has a size of its own, which kept the log small at presentation scale 1.5.
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  const QFont base = font();
  if (base.pointSizeF() > 0) mono.setPointSizeF(base.pointSizeF());
  else mono.setPixelSize(base.pixelSize());
  m_text->setFont(mono);
}

void EventLogView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::FontChange) applyFont();
}

void EventLogView::appendMessage(const QString& text) { m_text->appendHtml(QStringLiteral("<i>%1</i>").arg(text.toHtmlEscaped())); }

QString EventLogView::plainText() const { return m_text->toPlainText(); }

void EventLogView::clear() { m_text->clear(); }

}  // namespace amp::ui
