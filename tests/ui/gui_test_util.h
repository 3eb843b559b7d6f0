// Shared by the UI tests: small, fast experiments (a spirals MLP trains in well under a
// millisecond per step) and a helper that types a value into the experiment panel.
#pragma once

#include <QAbstractButton>
#include <QApplication>
#include <QLineEdit>
#include <QMessageBox>
#include <QTimer>
#include <QTest>
#include <string>
#include <utility>
#include <vector>

#include "ui/config_field.h"
#include "ui/experiment_panel.h"

namespace amp::test {

// A tiny classifier on the 2-D spirals: fast enough for many runs per test.
inline std::vector<std::pair<std::string, std::string>> tinySpirals(long steps) {
  return {{"model.name", "mlp"},        {"model.hidden", "16,16"}, {"model.activation", "tanh"},
          {"data.name", "spirals"},     {"data.samples", "400"},   {"train.batch_size", "50"},
          {"optimizer.name", "adam"},   {"optimizer.lr", "0.01"},  {"train.steps", std::to_string(steps)},
          {"train.histogram_every", "10"}, {"train.eval_every", "10"}, {"amp.mode", "fp16"},
          {"train.threads", "1"}};
}

inline void apply(ui::ExperimentPanel* panel, const std::vector<std::pair<std::string, std::string>>& kv) {
  for (const auto& [k, v] : kv) {
    const QString err = panel->setFieldValue(k, v);
    if (!err.isEmpty()) qWarning("%s=%s: %s", k.c_str(), v.c_str(), qPrintable(err));
  }
}

// Replaces a line-edit field's text with key presses, as a user would.
inline void typeInto(ui::ExperimentPanel* panel, const std::string& key, const QString& text) {
  auto* edit = qobject_cast<QLineEdit*>(panel->field(key)->editor());
  QVERIFY(edit);
  edit->setFocus();
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
}

// Answers the next modal message box as a user would: clicks the button whose text starts with
// `button` (polling, since the box opens inside a nested event loop). Records the box's text.
inline void answerNextMessageBox(const QString& button, QString* textSeen = nullptr) {
  auto* timer = new QTimer;
  timer->setInterval(10);
  QObject::connect(timer, &QTimer::timeout, [timer, button, textSeen] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) return;
    for (QAbstractButton* b : box->buttons())
      if (b->text().remove(QLatin1Char('&')).startsWith(button)) {
        if (textSeen) *textSeen = box->text();
        timer->stop();
        timer->deleteLater();
        b->click();
        return;
      }
  });
  timer->start();
}

}  // namespace amp::test
