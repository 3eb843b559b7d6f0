// Lessons: the presets of engine/config/presets.h as a list with their explanation. "Load"
// fills the experiment panel with the lesson's settings; "Run lesson" also starts it (every
// variant of a side-by-side lesson, e.g. fp32 vs fp16 without scaling vs fp16 with scaling).
// A lesson made for a GPU says so when none is usable, and offers its CPU-sized form.
#pragma once

#include <QWidget>

class QListWidget;
class QPushButton;
class QTextBrowser;

namespace amp {
struct Preset;
}

namespace amp::ui {

// A GPU lesson where no GPU is usable: the lesson is loaded in its CPU-sized form.
bool lessonRunsCpuSized(const Preset& p);

class LessonPanel : public QWidget {
  Q_OBJECT

 public:
  explicit LessonPanel(QWidget* parent = nullptr);
  QString currentLesson() const;
  bool selectLesson(const QString& name);  // false if unknown
  void setRunEnabled(bool enabled);        // the experiment panel is valid
  QTextBrowser* textView() const { return m_text; }  // the lesson's explanation (for tests)

 signals:
  void loadRequested(const QString& name);
  void runRequested(const QString& name);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void showLesson();

  QListWidget* m_list = nullptr;
  QTextBrowser* m_text = nullptr;
  QPushButton* m_load = nullptr;
  QPushButton* m_run = nullptr;
};

}  // namespace amp::ui
