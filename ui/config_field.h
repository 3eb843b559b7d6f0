// One editor for one config key of the schema (engine/config/config_schema.h): a combo box for
// choices, a check box for booleans, a line edit for everything else (so any text can be typed
// and the schema's own parser says what is wrong with it). Shows the key's help and default as a
// tooltip/placeholder, and an error as a red border plus the reason in the tooltip.
#pragma once

#include <QMap>
#include <QWidget>
#include <string>

#include "engine/config/config_schema.h"

class QCheckBox;
class QComboBox;
class QLineEdit;
class QPushButton;

namespace amp::ui {

class ConfigField : public QWidget {
  Q_OBJECT

 public:
  ConfigField(const ConfigKey& key, const QString& defaultValue, QWidget* parent = nullptr);

  const std::string& key() const { return m_key; }
  const QString& help() const { return m_help; }
  std::string value() const;
  void setValue(const std::string& value);  // does not emit edited()

  // Choice keys: the text shown for a choice, and choices that exist but cannot be used here.
  void setChoiceLabel(const std::string& choice, const QString& label);
  void setChoiceEnabled(const std::string& choice, bool enabled, const QString& reason = {});
  // String keys holding a path: a "…" button that opens a file (or folder) picker.
  void addBrowseButton(const QString& filter, bool folder = false);
  void setBrowseFolder(bool folder) { m_browseFolder = folder; }

  void setError(const QString& reason);  // empty: valid
  void refreshStyle();                   // after a palette change
  QString error() const { return m_error; }
  QWidget* editor() const { return m_editor; }

 signals:
  void edited();  // the user changed the value

 private:
  void updateToolTip();
  void browse();

  std::string m_key;
  QString m_help, m_default, m_error, m_browseFilter;
  bool m_browseFolder = false;
  bool m_number = false;  // shown in the shortest form that reads back to the same double
  QWidget* m_editor = nullptr;
  QComboBox* m_combo = nullptr;
  QCheckBox* m_check = nullptr;
  QLineEdit* m_line = nullptr;
};

}  // namespace amp::ui
