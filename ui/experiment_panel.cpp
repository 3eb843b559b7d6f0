#include "ui/experiment_panel.h"

#include <QFileInfo>

#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>
#include <QTabWidget>
#include <QVBoxLayout>
#include <set>

#include "engine/config/config_schema.h"
#include "ui/autocast_table.h"
#include "ui/config_field.h"
#include "ui/experiment_layout.h"
#include "ui/theme.h"

namespace amp::ui {

using namespace experiment_layout;

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
  const RunConfig defaults;
  for (const ConfigKey& k : configKeys()) {
    auto* f = new ConfigField(k, QString::fromStdString(k.get(defaults)), this);
    m_fields[k.key] = f;
    connect(f, &ConfigField::edited, this, [this] {
      m_runError.clear();
      revalidate();
    });
  }
  auto label = [this](const char* key, const char* choice, const QString& text) {
    m_fields.at(key)->setChoiceLabel(choice, text);
  };
  label("model.name", "recipe_mlp", tr("Recipe MLP (PyTorch AMP recipe)"));
  label("model.name", "mlp", tr("MLP classifier"));
  label("model.name", "cnn", tr("CNN"));
  label("model.name", "resnet", tr("ResNet (residual CNN)"));
  label("model.name", "external", tr("External (recorded elsewhere: not trainable)"));
  label("model.stem", "cifar", tr("3x3 conv (CIFAR)"));
  label("model.stem", "imagenet", tr("7x7/2 conv + max-pool (ImageNet)"));
  label("data.name", "synthetic", tr("Synthetic recipe data"));
  label("data.name", "fmnist", tr("Fashion-MNIST"));
  label("data.name", "spirals", tr("Spirals (2-D)"));
  label("data.name", "circles", tr("Circles (2-D)"));
  label("data.name", "blobs", tr("Blobs (2-D)"));
  label("data.name", "csv", tr("CSV file"));
  label("data.name", "cifar10", tr("CIFAR-10 (binary files)"));
  label("data.name", "images", tr("Image folder (a sub-folder per class)"));
  label("amp.mode", "fp32", tr("fp32"));
  label("amp.mode", "fp16", tr("AMP fp16"));
  label("amp.mode", "bf16", tr("AMP bf16"));
  label("amp.mode", "pure_fp16", tr("pure fp16 (no master weights)"));
  label("backend", "auto", tr("auto (the GPU when usable)"));
  m_fields.at("data.path")->addBrowseButton(tr("CSV files (*.csv);;All files (*)"));
  m_fields.at("data.test_path")->addBrowseButton({}, true);

  m_modeNote = new QLabel(this);
  m_scalerNote = new QLabel(this);
  m_backendNote = new QLabel(tr("Backend: probing…"), this);
  for (QLabel* l : {m_modeNote, m_scalerNote, m_backendNote}) {
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
  }

  m_autocast = new AutocastTable(this);
  connect(m_autocast, &AutocastTable::edited, this, [this] {
    m_runError.clear();
    revalidate();
  });

  // Any key the schema gains later still gets a field, in a catch-all group.
  std::set<std::string> placed;
  for (const Groups* tab : {&kModelTab, &kPrecisionTab, &kTrainingTab})
    for (const auto& [title, keys] : *tab) placed.insert(keys.begin(), keys.end());
  Groups training = kTrainingTab;
  std::vector<std::string> others;
  for (const auto& [key, f] : m_fields)
    if (!placed.count(key)) others.push_back(key);
  if (!others.empty()) training.push_back({tr("Other"), others});

  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(buildTab(kModelTab), tr("Model"));
  m_tabs->addTab(buildTab(kPrecisionTab), tr("Precision"));
  m_tabs->addTab(buildTab(training), tr("Training"));
  m_tabs->addTab(m_autocast, tr("Autocast"));

  m_message = new QLabel(this);
  m_message->setWordWrap(true);
  m_message->setObjectName(QStringLiteral("experimentMessage"));
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 4);
  layout->addWidget(m_tabs, 1);
  layout->addWidget(m_message);
  setConfig(defaults);
}

QWidget* ExperimentPanel::buildTab(const Groups& groups) {
  auto* page = new QWidget;
  auto* v = new QVBoxLayout(page);
  v->setContentsMargins(6, 6, 6, 6);
  for (const auto& [title, keys] : groups) {
    auto* box = new QGroupBox(title, page);
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    for (const std::string& key : keys) {
      if (key == kModeNote) form->addRow(m_modeNote);
      else if (key == kBackendNote) form->addRow(m_backendNote);
      else if (key == kScalerNote) form->addRow(m_scalerNote);
      else if (key == kScalerDefaults) {
        auto* b = new QPushButton(tr("PyTorch defaults"), box);
        b->setToolTip(tr("torch.amp.GradScaler(init_scale=65536, growth_factor=2.0, "
                         "backoff_factor=0.5, growth_interval=2000)"));
        connect(b, &QPushButton::clicked, this, [this] {
          const RunConfig d;
          for (const auto& [k, f] : m_fields)
            if (k.rfind("scaler.", 0) == 0) f->setValue(findConfigKey(k)->get(d));
          m_runError.clear();
          revalidate();
        });
        form->addRow(QString(), b);
      } else if (auto it = m_fields.find(key); it != m_fields.end()) {
        auto* l = new QLabel(labelFor(key), box);
        l->setToolTip(QString::fromStdString(key));
        form->addRow(l, it->second);
      }
    }
    v->addWidget(box);
  }
  v->addStretch(1);
  auto* scroll = new QScrollArea;
  scroll->setWidget(page);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  return scroll;
}

ConfigField* ExperimentPanel::field(const std::string& key) const {
  auto it = m_fields.find(key);
  return it == m_fields.end() ? nullptr : it->second;
}

void ExperimentPanel::setConfig(const RunConfig& config) {
  m_loading = true;
  for (const auto& [key, f] : m_fields) f->setValue(findConfigKey(key)->get(config));
  m_autocast->setOverrides(config.autocastOverrides);
  m_unknownAutocast.clear();
  const auto known = m_autocast->overrides();
  for (const auto& [op, p] : config.autocastOverrides)
    if (!known.count(op)) m_unknownAutocast[op] = p;
  m_loading = false;
  m_runError.clear();
  revalidate();
}

QString ExperimentPanel::setFieldValue(const std::string& key, const std::string& value) {
  ConfigField* f = field(key);
  if (!f) return tr("unknown key %1").arg(QString::fromStdString(key));
  f->setValue(value);
  m_runError.clear();
  revalidate();
  return f->error();
}

QString ExperimentPanel::dataPathProblem(const RunConfig& c) {
  const QString path = QString::fromStdString(c.data.path);
  if (c.data.name == "csv") {
    if (path.isEmpty()) return tr("data.path: data.name=csv needs a CSV file");
    const QFileInfo fi(path);
    if (!fi.exists()) return tr("data.path: no such file: %1").arg(path);
    if (fi.isDir()) return tr("data.path: %1 is a folder, not a CSV file").arg(path);
    if (!fi.isReadable()) return tr("data.path: %1 is not readable").arg(path);
  } else if (c.data.name == "fmnist" && !path.isEmpty()) {
    if (!QFileInfo(path).isDir()) return tr("data.path: no Fashion-MNIST folder %1").arg(path);
  } else if (c.data.name == "cifar10" || c.data.name == "images") {
    // Checked at once, like the CSV file: the folder's contents are the loader's to judge.
    if (path.isEmpty())
      return tr("data.path: data.name=%1 needs a folder").arg(QString::fromStdString(c.data.name));
    if (!QFileInfo(path).isDir()) return tr("data.path: no such folder: %1").arg(path);
    const QString test = QString::fromStdString(c.data.testPath);
    if (c.data.name == "images" && !test.isEmpty() && !QFileInfo(test).isDir())
      return tr("data.test_path: no such folder: %1").arg(test);
  }
  return {};
}

void ExperimentPanel::revalidate() {
  if (m_loading) return;
  const bool wasValid = isValid();
  RunConfig c;
  std::map<std::string, QString> errors;
  for (const auto& [key, f] : m_fields) {
    try {
      setConfigValue(c, key, f->value());
    } catch (const ConfigError& e) {
      errors[key] = QString::fromStdString(e.what());
    }
  }
  auto overrides = m_unknownAutocast;
  for (const auto& [op, p] : m_autocast->overrides()) overrides[op] = p;
  for (const auto& [op, p] : overrides) setConfigValue(c, "autocast." + op, p);

  // A parse error in a field the current choices hide cannot matter to this run.
  QString problem;
  for (const auto& [key, f] : m_fields) {
    auto it = errors.find(key);
    const bool show = it != errors.end() && relevant(key, c);
    f->setError(show ? it->second : QString());
    if (show && problem.isEmpty()) problem = it->second;
  }
  if (problem.isEmpty()) {
    if (auto e = validateRunConfig(c)) {
      problem = QString::fromStdString(*e);
      const std::string key = e->substr(0, e->find_first_of(" :"));
      if (ConfigField* f = field(key)) f->setError(problem);
    }
  }
  if (problem.isEmpty()) {
    // Files are checked here, not at Start: a run that fails on its first step has already
    // taken a row in the runs table and a colour in the charts.
    problem = dataPathProblem(c);
    if (!problem.isEmpty())
      if (ConfigField* f = field("data.path")) f->setError(problem);
  }
  m_config = c;
  m_problem = problem;
  updateVisibility();
  updateNotes();
  if (!m_runError.isEmpty()) setMessage(m_runError, true);
  else if (!problem.isEmpty()) setMessage(problem, true);
  else
    setMessage(tr("Ready: %1 · %2 on %3 · %4")
                   .arg(QString::fromUtf8(precisionModeName(c.mode).data()),
                        QString::fromStdString(c.model.name), QString::fromStdString(c.data.name),
                        c.train.steps > 0 ? tr("%1 steps").arg(c.train.steps)
                                          : tr("%1 epochs").arg(c.train.epochs)),
               false);
  if (wasValid != isValid()) emit validityChanged(isValid());
  emit configChanged();
}

void ExperimentPanel::updateVisibility() {
  for (const auto& [key, f] : m_fields) {
    auto* form = f->parentWidget() ? qobject_cast<QFormLayout*>(f->parentWidget()->layout()) : nullptr;
    if (form) form->setRowVisible(f, relevant(key, m_config) || !f->error().isEmpty());
  }
  // fmnist reads a folder, csv a file: the same field, a different picker.
  if (auto* path = field("data.path")) path->setBrowseFolder(m_config.data.name != "csv");
  if (auto* path = field("data.test_path")) path->setBrowseFolder(true);
  // Tabs holding an invalid field carry a warning icon, so hidden problems are findable.
  const QIcon warn = style()->standardIcon(QStyle::SP_MessageBoxWarning);
  for (int i = 0; i < m_tabs->count(); ++i) {
    bool bad = false;
    for (const auto& [key, f] : m_fields)
      if (!f->error().isEmpty() && m_tabs->widget(i)->isAncestorOf(f)) bad = true;
    m_tabs->setTabIcon(i, bad ? warn : QIcon());
  }
}

void ExperimentPanel::updateNotes() {
  const RunConfig& c = m_config;
  m_modeNote->setText(QStringLiteral("<small>%1</small>").arg(modeExplanation(c.mode)));
  QString scaler;
  bool warn = false;
  const bool active = c.scalerActive();
  switch (c.mode) {
    case PrecisionMode::Fp32:
      scaler = active ? tr("A scaler on fp32 only multiplies and divides by powers of two: it "
                           "changes nothing.")
                      : tr("No scaler: fp32 gradients do not underflow.");
      break;
    case PrecisionMode::AmpBf16:
    case PrecisionMode::Fp8:
      warn = active;
      scaler = active ? tr("A scaler on bf16 does nothing useful: bf16 has fp32's exponent range, "
                           "so tiny gradients survive without scaling.")
                      : tr("No scaler, as PyTorch's recipe for bf16 (GradScaler(enabled=False)).");
      break;
    case PrecisionMode::AmpFp16:
    case PrecisionMode::PureFp16:
      warn = !active || c.scaler.kind == ScalerKind::None;
      scaler = !active ? tr("Scaler disabled: fp16 gradients below 2⁻²⁴ round to zero.")
               : c.scaler.kind == ScalerKind::None
                   ? tr("Scaler kind 'none': the scale stays 1, so fp16 underflow shows.")
                   : tr("Scaler on (auto: on for fp16). Defaults are torch.amp.GradScaler's.");
      break;
  }
  m_scalerNote->setText(warn ? QStringLiteral("<small><span style='color:%1'>⚠ %2</span></small>")
                                   .arg(warningColor().name(), scaler.toHtmlEscaped())
                             : QStringLiteral("<small>%1</small>").arg(scaler.toHtmlEscaped()));
}

void ExperimentPanel::setBackendInfo(const QString& description, const QString& cudaUnavailableReason) {
  // One line per device (the CPU, each GPU or why none is usable).
  m_backendNote->setText(QStringLiteral("<small>%1</small>")
                             .arg(description.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
  if (!cudaUnavailableReason.isEmpty())
    m_fields.at("backend")->setChoiceEnabled("cuda", false, cudaUnavailableReason);
}

void ExperimentPanel::showRunError(const QString& message) {
  m_runError = tr("Could not start: %1").arg(message);
  setMessage(m_runError, true);
}

void ExperimentPanel::setMessage(const QString& text, bool error) {
  m_message->setText(text);
  m_messageIsError = error;
  // Only errors get a colour of their own; other text follows the palette (light or dark).
  m_message->setStyleSheet(error ? QStringLiteral("color: %1;").arg(errorColor().name()) : QString());
}

void ExperimentPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && m_message) {
    updateNotes();
    setMessage(m_message->text(), m_messageIsError);
    for (const auto& [key, f] : m_fields) f->refreshStyle();
  }
}

}  // namespace amp::ui
