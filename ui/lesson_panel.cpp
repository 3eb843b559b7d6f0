#include "ui/lesson_panel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMap>
#include <QPushButton>
#include <QSplitter>
#include <QStyle>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "engine/backend/backend_registry.h"
#include "engine/config/presets.h"
#include "ui/theme.h"

namespace amp::ui {

LessonPanel::LessonPanel(QWidget* parent) : QWidget(parent) {
  m_list = new QListWidget(this);
  for (const Preset& p : presets()) {
    auto* item = new QListWidgetItem(QString::fromStdString(p.title), m_list);
    item->setData(Qt::UserRole, QString::fromStdString(p.name));
    item->setToolTip(QStringLiteral("--lesson %1").arg(QString::fromStdString(p.name)));
  }
  m_text = new QTextBrowser(this);
  m_text->setOpenLinks(false);

  m_load = new QPushButton(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("Load"), this);
  m_load->setToolTip(tr("Fill the experiment panel with this lesson's settings"));
  m_run = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Run lesson"), this);
  m_run->setToolTip(tr("Load and start it (all its variants side by side)"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_load);
  buttons->addWidget(m_run);
  buttons->addStretch(1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_list);
  split->addWidget(m_text);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split, 1);
  layout->addLayout(buttons);

  connect(m_list, &QListWidget::currentRowChanged, this, &LessonPanel::showLesson);
  connect(m_list, &QListWidget::itemDoubleClicked, this, [this] { emit loadRequested(currentLesson()); });
  connect(m_load, &QPushButton::clicked, this, [this] { emit loadRequested(currentLesson()); });
  connect(m_run, &QPushButton::clicked, this, [this] { emit runRequested(currentLesson()); });
  m_list->setCurrentRow(0);
}

void LessonPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  // The theme changed: the text's warning takes the new palette's colours.
  if (event->type() == QEvent::PaletteChange) showLesson();
}

bool lessonRunsCpuSized(const Preset& p) { return p.needsGpu && !gpuInventory().usable(); }

QString LessonPanel::currentLesson() const {
  const QListWidgetItem* item = m_list->currentItem();
  return item ? item->data(Qt::UserRole).toString() : QString();
}

bool LessonPanel::selectLesson(const QString& name) {
  for (int i = 0; i < m_list->count(); ++i)
    if (m_list->item(i)->data(Qt::UserRole).toString() == name) {
      m_list->setCurrentRow(i);
      return true;
    }
  return false;
}

void LessonPanel::setRunEnabled(bool enabled) { m_run->setEnabled(enabled); }

void LessonPanel::showLesson() {
  const Preset* p = findPreset(currentLesson().toStdString());
  m_load->setEnabled(p);
  m_run->setText(tr("Run lesson"));
  if (!p) {
    m_text->clear();
    return;
  }
  QString html = QStringLiteral("<h3>%1</h3>").arg(QString::fromStdString(p->title).toHtmlEscaped());
  if (lessonRunsCpuSized(*p)) {
    // Said first: the numbers in the explanation are a GPU's, not what this machine will show.
    QStringList sized;
    for (const auto& [k, v] : p->cpuSized)
      sized << QStringLiteral("%1=%2").arg(QString::fromStdString(k), QString::fromStdString(v));
    // The theme's warning colours, fill and text both: a fixed pale fill under the dark
    // palette's light text could not be read (issue 42 item 3).
    html += QStringLiteral("<p style='background-color:%1; color:%2; padding:4px'>")
                .arg(warningBackground().name(), warningText().name()) +
            tr("<b>No usable GPU here:</b> %1. This "
               "lesson is made for one; Load and Run use the CPU-sized recipe instead (%2): the "
               "same three runs side by side, smaller, and the speed-ups a CPU gives.")
                .arg(QString::fromStdString(gpuInventory().unavailableReason).toHtmlEscaped(),
                     sized.join(QStringLiteral(", ")).toHtmlEscaped()) +
            QStringLiteral("</p>");
    m_run->setText(tr("Run CPU-sized"));
  }
  html += QStringLiteral("<p>%1</p>").arg(QString::fromStdString(p->explanation).toHtmlEscaped());
  if (!p->variants.empty()) {
    html += tr("<p><b>Runs side by side:</b></p><ul>");
    for (const PresetVariant& v : p->variants) {
      QStringList kv;
      for (const auto& [k, val] : v.overrides)
        kv << QStringLiteral("%1=%2").arg(QString::fromStdString(k), QString::fromStdString(val));
      html += QStringLiteral("<li><b>%1</b> <small>%2</small></li>")
                  .arg(QString::fromStdString(v.label).toHtmlEscaped(), kv.join(QStringLiteral(", ")).toHtmlEscaped());
    }
    html += QStringLiteral("</ul>");
  }
  // Presets build on shared lists and override some keys later: show each key once, as it ends up.
  QStringList keys;
  QMap<QString, QString> values;
  for (const auto& [k, v] : p->settings) {
    const QString key = QString::fromStdString(k);
    if (!values.contains(key)) keys << key;
    values[key] = QString::fromStdString(v);
  }
  QStringList settings;
  for (const QString& k : std::as_const(keys)) settings << QStringLiteral("%1=%2").arg(k, values[k]);
  html += tr("<p><small>Settings: %1</small></p>").arg(settings.join(QStringLiteral(", ")).toHtmlEscaped());
  m_text->setHtml(html);
}

}  // namespace amp::ui
