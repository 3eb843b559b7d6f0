// The experiment form: every config key of the schema as a field, grouped in tabs (model and
// data, precision and loss scaler, optimizer and schedule, training, autocast lists), with the
// fields that do not apply to the current choices hidden. Every edit rebuilds a RunConfig with
// the schema's own setters and validateRunConfig, marks the offending field and keeps Start
// disabled until all is valid. Explains each precision mode and what the CPU does natively.
#pragma once

#include <QWidget>
#include <map>
#include <optional>
#include <string>

#include "engine/config/run_config.h"

class QLabel;
class QTabWidget;

namespace amp::ui {

class AutocastTable;
class ConfigField;

class ExperimentPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ExperimentPanel(QWidget* parent = nullptr);

  void setConfig(const RunConfig& config);  // fills every field; emits configChanged
  RunConfig config() const { return m_config; }  // the last config that parsed (valid or not)
  bool isValid() const { return m_problem.isEmpty(); }
  QString problem() const { return m_problem; }  // the first problem, one line naming the key
  ConfigField* field(const std::string& key) const;
  // Sets one key as if typed (tests, lessons); returns the field's error, empty if accepted.
  QString setFieldValue(const std::string& key, const std::string& value);

  // What the backend runs natively and what it emulates, and whether a CUDA device exists.
  void setBackendInfo(const QString& description, const QString& cudaUnavailableReason);
  // A problem only found when the run started (e.g. a data file that cannot be read).
  void showRunError(const QString& message);

 protected:
  void changeEvent(QEvent* event) override;  // palette switch: recolour notes and errors

 signals:
  void validityChanged(bool valid);
  void configChanged();

 public:
  // A data file or folder the config names that cannot be read: "data.path: no such file: …".
  static QString dataPathProblem(const RunConfig& c);

 private:
  QWidget* buildTab(const std::vector<std::pair<QString, std::vector<std::string>>>& groups);
  void revalidate();
  void updateVisibility();
  void updateNotes();
  void setMessage(const QString& text, bool error);

  std::map<std::string, ConfigField*> m_fields;
  AutocastTable* m_autocast = nullptr;
  QTabWidget* m_tabs = nullptr;
  QLabel* m_modeNote = nullptr;
  QLabel* m_scalerNote = nullptr;
  QLabel* m_backendNote = nullptr;
  QLabel* m_message = nullptr;
  RunConfig m_config;
  std::map<std::string, std::string> m_unknownAutocast;  // overrides of ops the table lacks
  QString m_problem;
  QString m_runError;
  bool m_loading = false;
  bool m_messageIsError = false;
};

}  // namespace amp::ui
