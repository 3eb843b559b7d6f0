#include "ui/event_log_view.h"

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
  m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
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

void EventLogView::appendMessage(const QString& text) { m_text->appendHtml(QStringLiteral("<i>%1</i>").arg(text.toHtmlEscaped())); }

QString EventLogView::plainText() const { return m_text->toPlainText(); }

void EventLogView::clear() { m_text->clear(); }

}  // namespace amp::ui
