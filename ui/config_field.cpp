#include "ui/config_field.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QStandardItemModel>
#include <QToolButton>
#include <charconv>
#include <cstdlib>

#include "ui/theme.h"

namespace amp::ui {

namespace {
// The schema writes numbers with 17 digits ("0.10000000000000001"); people read the shortest
// text that parses back to the same double ("0.1").
std::string shortestNumber(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end) return text;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : text;
}
}  // namespace

ConfigField::ConfigField(const ConfigKey& key, const QString& defaultValue, QWidget* parent)
    : QWidget(parent), m_key(key.key), m_help(QString::fromStdString(key.help)),
      m_default(key.type == "number" ? QString::fromStdString(shortestNumber(defaultValue.toStdString()))
                                     : defaultValue) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  if (key.type == "choice") {
    m_combo = new QComboBox(this);
    // Long choice texts must not widen the whole dock; the popup still shows them in full.
    m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_combo->setMinimumContentsLength(12);
    for (const auto& c : key.choices)
      m_combo->addItem(QString::fromStdString(c), QString::fromStdString(c));
    connect(m_combo, &QComboBox::activated, this, &ConfigField::edited);
    m_editor = m_combo;
  } else if (key.type == "bool") {
    m_check = new QCheckBox(this);
    connect(m_check, &QCheckBox::clicked, this, &ConfigField::edited);
    m_editor = m_check;
  } else {
    m_number = key.type == "number";
    m_line = new QLineEdit(this);
    m_line->setPlaceholderText(m_default.isEmpty() ? QString() : tr("default %1").arg(m_default));
    m_line->setClearButtonEnabled(false);
    connect(m_line, &QLineEdit::textEdited, this, &ConfigField::edited);
    m_editor = m_line;
  }
  m_editor->setObjectName(QString::fromStdString(m_key));  // tests and style sheets find it by key
  layout->addWidget(m_editor, 1);
  updateToolTip();
}

std::string ConfigField::value() const {
  if (m_combo) return m_combo->currentData().toString().toStdString();
  if (m_check) return m_check->isChecked() ? "true" : "false";
  return m_line->text().trimmed().toStdString();
}


void ConfigField::setValue(const std::string& value) {
  const QString v = QString::fromStdString(m_number ? shortestNumber(value) : value);
  if (m_combo) {
    const int i = m_combo->findData(v);
    if (i >= 0) m_combo->setCurrentIndex(i);
  } else if (m_check) {
    m_check->setChecked(value == "true");
  } else if (m_line->text() != v) {
    m_line->setText(v);
    m_line->setCursorPosition(0);
  }
}

void ConfigField::setChoiceLabel(const std::string& choice, const QString& label) {
  if (!m_combo) return;
  const int i = m_combo->findData(QString::fromStdString(choice));
  if (i >= 0) m_combo->setItemText(i, label);
}

void ConfigField::setChoiceEnabled(const std::string& choice, bool enabled, const QString& reason) {
  auto* model = m_combo ? qobject_cast<QStandardItemModel*>(m_combo->model()) : nullptr;
  if (!model) return;
  const int i = m_combo->findData(QString::fromStdString(choice));
  if (i < 0) return;
  QStandardItem* item = model->item(i);
  item->setEnabled(enabled);
  item->setToolTip(reason);
  if (!enabled && !reason.isEmpty())
    item->setText(QString::fromStdString(choice) + QStringLiteral(" — ") + reason);
}

void ConfigField::addBrowseButton(const QString& filter, bool folder) {
  m_browseFilter = filter;
  m_browseFolder = folder;
  auto* button = new QToolButton(this);
  button->setText(QStringLiteral("…"));
  button->setToolTip(folder ? tr("Choose a folder") : tr("Choose a file"));
  connect(button, &QToolButton::clicked, this, &ConfigField::browse);
  layout()->addWidget(button);
}

void ConfigField::browse() {
  const QString start = m_line ? m_line->text() : QString();
  const QString path = m_browseFolder
                           ? QFileDialog::getExistingDirectory(this, tr("Data folder"), start)
                           : QFileDialog::getOpenFileName(this, tr("Data file"), start, m_browseFilter);
  if (path.isEmpty() || !m_line) return;
  m_line->setText(path);
  emit edited();
}

void ConfigField::setError(const QString& reason) {
  if (reason == m_error) return;
  m_error = reason;
  refreshStyle();
}

void ConfigField::refreshStyle() {
  // A red frame marks the field; the reason goes in the tooltip and the panel's message line.
  m_editor->setProperty("invalid", !m_error.isEmpty());
  m_editor->setStyleSheet(m_error.isEmpty() ? QString()
                                            : QStringLiteral("border: 1px solid %1; border-radius: 2px;")
                                                  .arg(errorColor().name()));
  updateToolTip();
}

void ConfigField::updateToolTip() {
  QString tip;
  if (!m_error.isEmpty()) tip += QStringLiteral("<p style='color:%1'><b>%2</b></p>").arg(errorColor().name(), m_error.toHtmlEscaped());
  tip += QStringLiteral("<p><code>%1</code> — %2</p>").arg(QString::fromStdString(m_key), m_help.toHtmlEscaped());
  if (!m_default.isEmpty()) tip += tr("<p>Default: %1</p>").arg(m_default.toHtmlEscaped());
  m_editor->setToolTip(tip);
}

}  // namespace amp::ui
