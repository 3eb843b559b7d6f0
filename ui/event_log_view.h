// The event log: one line per notable step of every run (skipped steps and the parameter that
// overflowed, scale changes, divergence), plus run start and end, prefixed by the run's name in
// its chart colour. Sentences come from engine/train/event_text.h, as in the CLI.
#pragma once

#include <QWidget>

class QPlainTextEdit;

namespace amp::ui {

struct RunData;

class EventLogView : public QWidget {
  Q_OBJECT

 public:
  explicit EventLogView(QWidget* parent = nullptr);
  void appendLines(const RunData* run, const QStringList& lines);
  void appendMessage(const QString& text);  // app-level notes (files opened, errors)
  QString plainText() const;
  void clear();

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void applyFont();  // the fixed-width font at the size of this widget's (presentation scale)
  QPlainTextEdit* m_text = nullptr;
};

}  // namespace amp::ui
