#include "ui/autocast_table.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <set>

#include "engine/amp/autocast_policy.h"

namespace amp::ui {

namespace {
constexpr int kOpColumn = 0, kDefaultColumn = 1, kPolicyColumn = 2;

// The op names this engine's layers and losses ask autocast about (see engine/nn): listed first
// and shown by default, since editing the others changes nothing in these models.
const std::set<std::string> kEngineOps = {"linear", "conv2d", "relu", "tanh", "sigmoid",
                                          "gelu", "max_pool2d", "dropout", "batch_norm",
                                          "cross_entropy", "mse_loss"};

const CastPolicy kPolicies[] = {CastPolicy::LowerPrecision, CastPolicy::Fp32, CastPolicy::Fp32Output,
                                CastPolicy::Promote, CastPolicy::PassThrough, CastPolicy::Banned};

QString policyLabel(CastPolicy p) {
  switch (p) {
    case CastPolicy::LowerPrecision: return QObject::tr("low (fp16/bf16)");
    case CastPolicy::Fp32: return QObject::tr("fp32");
    case CastPolicy::Fp32Output: return QObject::tr("fp32 output");
    case CastPolicy::Promote: return QObject::tr("promote (widest)");
    case CastPolicy::PassThrough: return QObject::tr("input's dtype");
    case CastPolicy::Banned: return QObject::tr("banned");
  }
  return {};
}

QComboBox* policyCombo(QTableWidget* table, int row) {
  return qobject_cast<QComboBox*>(table->cellWidget(row, kPolicyColumn));
}
}  // namespace

AutocastTable::AutocastTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* intro = new QLabel(tr("Which dtype each op runs in inside an autocast region (AMP fp16/bf16 "
                              "only). Defaults are PyTorch's CUDA lists; edited rows are bold."),
                           this);
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto* tools = new QHBoxLayout;
  m_filter = new QLineEdit(this);
  m_filter->setPlaceholderText(tr("Filter ops"));
  m_showAll = new QCheckBox(tr("All PyTorch ops"), this);
  m_showAll->setToolTip(tr("Also list the ops PyTorch's autocast knows but these models never run"));
  auto* reset = new QPushButton(tr("PyTorch lists"), this);
  reset->setToolTip(tr("Reset every op to PyTorch's list"));
  tools->addWidget(m_filter, 1);
  tools->addWidget(m_showAll);
  tools->addWidget(reset);
  layout->addLayout(tools);

  const AutocastPolicy defaults = AutocastPolicy::pytorchDefault();
  std::vector<std::pair<std::string, CastPolicy>> ops(defaults.table().begin(), defaults.table().end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return kEngineOps.count(a.first) > kEngineOps.count(b.first);
  });
  m_table = new QTableWidget(int(ops.size()), 3, this);
  m_table->setHorizontalHeaderLabels({tr("op"), tr("PyTorch"), tr("this run")});
  m_table->verticalHeader()->hide();
  m_table->setSelectionMode(QAbstractItemView::NoSelection);
  m_table->horizontalHeader()->setSectionResizeMode(kOpColumn, QHeaderView::Stretch);
  m_table->horizontalHeader()->setSectionResizeMode(kDefaultColumn, QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(kPolicyColumn, QHeaderView::ResizeToContents);
  for (int row = 0; row < int(ops.size()); ++row) {
    const auto& [op, policy] = ops[row];
    auto* name = new QTableWidgetItem(QString::fromStdString(op));
    name->setData(Qt::UserRole, int(policy));
    name->setData(Qt::UserRole + 1, kEngineOps.count(op) > 0);
    name->setFlags(Qt::ItemIsEnabled);
    m_table->setItem(row, kOpColumn, name);
    auto* def = new QTableWidgetItem(policyLabel(policy));
    def->setFlags(Qt::ItemIsEnabled);
    m_table->setItem(row, kDefaultColumn, def);
    auto* combo = new QComboBox(m_table);
    for (CastPolicy p : kPolicies) combo->addItem(policyLabel(p), QString::fromUtf8(castPolicyName(p).data()));
    combo->setCurrentIndex(int(policy));
    connect(combo, &QComboBox::currentIndexChanged, this, [this, row] {
      markRow(row);
      if (!m_updating) emit edited();
    });
    m_table->setCellWidget(row, kPolicyColumn, combo);
  }
  layout->addWidget(m_table, 1);

  connect(m_filter, &QLineEdit::textChanged, this, &AutocastTable::applyFilter);
  connect(m_showAll, &QCheckBox::toggled, this, &AutocastTable::applyFilter);
  connect(reset, &QPushButton::clicked, this, [this] {
    resetToPyTorch();
    emit edited();
  });
  applyFilter();
}

std::map<std::string, std::string> AutocastTable::overrides() const {
  std::map<std::string, std::string> out;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const QTableWidgetItem* name = m_table->item(row, kOpColumn);
    const QComboBox* combo = policyCombo(m_table, row);
    if (combo->currentIndex() != name->data(Qt::UserRole).toInt())
      out[name->text().toStdString()] = combo->currentData().toString().toStdString();
  }
  return out;
}

void AutocastTable::setOverrides(const std::map<std::string, std::string>& overrides) {
  m_updating = true;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const QTableWidgetItem* name = m_table->item(row, kOpColumn);
    QComboBox* combo = policyCombo(m_table, row);
    auto it = overrides.find(name->text().toStdString());
    int index = name->data(Qt::UserRole).toInt();
    if (it != overrides.end())
      if (auto p = parseCastPolicy(it->second)) index = int(*p);
    combo->setCurrentIndex(index);
  }
  m_updating = false;
  // An override of an op missing from the table (a JSON file naming a new op) is kept by the
  // config itself; the table only shows the ops it knows.
}

void AutocastTable::resetToPyTorch() { setOverrides({}); }

void AutocastTable::markRow(int row) {
  QTableWidgetItem* name = m_table->item(row, kOpColumn);
  QFont f = name->font();
  f.setBold(policyCombo(m_table, row)->currentIndex() != name->data(Qt::UserRole).toInt());
  name->setFont(f);
  applyFilter();
}

void AutocastTable::applyFilter() {
  const QString text = m_filter->text().trimmed();
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const QTableWidgetItem* name = m_table->item(row, kOpColumn);
    const bool used = name->data(Qt::UserRole + 1).toBool();
    const bool edited = policyCombo(m_table, row)->currentIndex() != name->data(Qt::UserRole).toInt();
    const bool match = text.isEmpty() || name->text().contains(text, Qt::CaseInsensitive);
    m_table->setRowHidden(row, !(match && (used || edited || m_showAll->isChecked() || !text.isEmpty())));
  }
}

}  // namespace amp::ui
