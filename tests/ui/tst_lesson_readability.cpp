// Issue 42 items 2 and 3: a lesson read from the back of a room. At 1024x640 and presentation
// scale 1.5 the result panel showed its headline and part of one run's line (the rest needed
// scrolling), the tool bar cut "full speed" to "full spee" and the progress to "600/6"; in the
// dark theme the tensor-cores lesson's "no usable GPU" warning was light grey on pale yellow.
#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QLabel>
#include <QScrollArea>
#include <QStandardPaths>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QToolBar>
#include <cmath>

#include "engine/backend/backend_registry.h"
#include "gui_session_fixture.h"
#include "ui/charts/dashboard.h"
#include "ui/lesson_panel.h"
#include "ui/lesson_result_view.h"
#include "ui/main_actions.h"
#include "ui/main_window.h"
#include "ui/speed_control.h"
#include "ui/theme.h"

using namespace amp;

namespace {

// WCAG's contrast ratio of two colours (1 to 21; 4.5 is the floor for body text).
double contrast(const QColor& a, const QColor& b) {
  auto lum = [](const QColor& c) {
    auto ch = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF());
  };
  const double la = lum(a), lb = lum(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// A result as long as the recipe's on a CPU: three runs' lines, a criterion and a note.
ui::LessonResult longResult() {
  ui::LessonResult r;
  r.lesson = QStringLiteral("recipe");
  r.title = QStringLiteral("The PyTorch AMP recipe");
  r.claim = QStringLiteral("Where its 16-bit matrix multiplies run natively (tensor cores, AMX), AMP takes less "
                           "time per step than fp32 and follows fp32's loss.");
  const QColor colors[] = {QColor(0x4e79a7), QColor(0xe8741a), QColor(0x3f8f3a)};
  const char* labels[] = {"fp32", "fp16", "bf16"};
  for (int i = 0; i < 3; ++i)
    r.findings.append({i + 1, QString::fromLatin1(labels[i]), colors[i],
                       i == 0 ? QStringLiteral("reached loss 1.01, 93.88 ms/step, peak memory 28.0 MiB")
                              : QStringLiteral("reached loss 1.01, 105.72 ms/step (0.89x fp32's speed), peak "
                                               "memory 34.5 MiB (1.23x fp32's)")});
  r.verdict = ui::LessonResult::Verdict::Inconclusive;
  r.notMeasurable = true;
  r.criterion = QStringLiteral("fp16 and bf16 emulated here: step times of the emulation, not of AMP; fp32's "
                               "loss went from 1.008 to 1.01: nothing was learned, so losses that agree test nothing");
  r.note = QStringLiteral("On an NVIDIA H200 (this recipe at 4096/512): fp32 3.32 ms/step, AMP fp16 1.82, AMP bf16 "
                          "1.13. Here the emulated runs' 16-bit weight copies outweigh their halved activations.");
  r.chart = QStringLiteral("histogram");  // the tallest chart panel (its pickers, tabs and caption)
  return r;
}

// fmnist-cnn's result on this CPU: the longest of the three-mode lessons (skipped steps, speed
// and memory ratios, a note on both).
ui::LessonResult cnnResult() {
  ui::LessonResult r;
  r.lesson = QStringLiteral("fmnist-cnn");
  r.title = QStringLiteral("Fashion-MNIST CNN");
  r.claim = QStringLiteral("AMP (fp16 with loss scaling, and bf16) trains to the same result as fp32.");
  r.findings.append({1, QStringLiteral("fp32"), QColor(0x4e79a7),
                     QStringLiteral("reached loss 1.212, accuracy 63.7%, 82.27 ms/step, peak memory 52.9 MiB")});
  r.findings.append({2, QStringLiteral("fp16"), QColor(0xe8741a),
                     QStringLiteral("reached loss 1.226, accuracy 58.7%, 1 step skipped by the loss scaler (17), 95.17 "
                                    "ms/step (0.86x fp32's speed), peak memory 59.3 MiB (1.12x fp32's)")});
  r.findings.append({3, QStringLiteral("bf16"), QColor(0x3f8f3a),
                     QStringLiteral("reached loss 1.209, accuracy 63.7%, 101.45 ms/step (0.81x fp32's speed), peak "
                                    "memory 59.3 MiB (1.12x fp32's)")});
  r.verdict = ui::LessonResult::Verdict::NotConfirmed;
  r.criterion = QStringLiteral("fp16's accuracy 58.7% vs fp32's 63.7%, bf16's accuracy 63.7% vs fp32's 63.7% (within 2 "
                               "points expected)");
  r.note = QStringLiteral("fp16 and bf16 are emulated in fp32 on this CPU (no native kernels): here fp16 and bf16 ran "
                          "slower and took more memory than fp32 (the 16-bit weight copies), which says nothing of a GPU.");
  r.chart = QStringLiteral("accuracy");
  return r;
}

// Whether `w` is shown whole: inside the scroll area's viewport (nothing to scroll to) and at
// least as tall as its text needs at its width.
bool wholeInView(QWidget* w, QScrollArea* scroll, QString* why) {
  if (!w->isVisible()) {
    *why = w->objectName() + QStringLiteral(" hidden");
    return false;
  }
  const QRect inViewport(w->mapTo(scroll->viewport(), QPoint(0, 0)), w->size());
  if (!scroll->viewport()->rect().contains(inViewport)) {
    *why = QStringLiteral("%1 at y %2..%3, viewport height %4")
               .arg(w->objectName())
               .arg(inViewport.top())
               .arg(inViewport.bottom())
               .arg(scroll->viewport()->height());
    return false;
  }
  if (w->hasHeightForWidth() && w->height() < w->heightForWidth(w->width())) {
    *why = QStringLiteral("%1 %2 px tall, needs %3").arg(w->objectName()).arg(w->height()).arg(w->heightForWidth(w->width()));
    return false;
  }
  return true;
}

}  // namespace

class TestLessonReadability : public test::SessionFixture {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void cleanup() {
    ui::applyTheme(ui::Theme::Light);
    if (m_session) {
      window()->setPresentationScale(1.0);
      m_session.reset();
    }
  }

  // Item 3: the warning takes the theme's colours, and changes with it.
  void theNoGpuWarningIsReadableInBothThemes() {
    if (gpuInventory().usable()) QSKIP("a GPU is usable here: the lesson shows no warning");
    ui::LessonPanel panel;
    QVERIFY(panel.selectLesson(QStringLiteral("tensor-cores")));
    for (const ui::Theme theme : {ui::Theme::Dark, ui::Theme::Light, ui::Theme::Dark}) {
      ui::applyTheme(theme);
      QApplication::processEvents();
      QTextDocument* doc = panel.textView()->document();
      bool found = false;
      for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        if (!b.text().contains(QStringLiteral("No usable GPU"))) continue;
        found = true;
        const QBrush fill = b.blockFormat().background();
        QVERIFY2(fill.style() != Qt::NoBrush, "the warning has a fill of its own");
        // The text's colour: its own where the HTML sets one, else the palette's.
        QColor text = panel.textView()->palette().color(QPalette::Text);
        for (auto it = b.begin(); !it.atEnd(); ++it)
          if (it.fragment().charFormat().hasProperty(QTextFormat::ForegroundBrush))
            text = it.fragment().charFormat().foreground().color();
        const double c = contrast(text, fill.color());
        QVERIFY2(c >= 4.5, qPrintable(QStringLiteral("%1 on %2: contrast %3 (%4 theme)")
                                          .arg(text.name(), fill.color().name())
                                          .arg(c, 0, 'f', 2)
                                          .arg(theme == ui::Theme::Dark ? QStringLiteral("dark") : QStringLiteral("light"))));
        // Dark theme: a dark fill, not a pale one under light text.
        if (theme == ui::Theme::Dark) QVERIFY(fill.color().lightness() < 128);
      }
      QVERIFY(found);
    }
  }

  // Item 2: at 1024x640 x1.5 every line of the result (headline, each run's line, criterion,
  // note) is on screen without scrolling, and a chart is still there under it.
  void theWholeResultIsVisibleOnASmallProjector() {
    QVERIFY(openSession());
    window()->resize(1024, 640);
    window()->setPresentationScale(1.5);
    QVERIFY(window()->loadLesson(QStringLiteral("recipe")));
    QApplication::processEvents();
    window()->showLessonResult(longResult());
    ui::LessonResultView* view = window()->lessonResultView();
    QTRY_VERIFY(view->isVisible());
    QApplication::processEvents();
    auto* scroll = view->findChild<QScrollArea*>();
    QVERIFY(scroll);
    for (QLabel* label : {view->headlineLabel(), view->findingsLabel(), view->criterionLabel(), view->noteLabel()}) {
      QString why;
      QTRY_VERIFY2(wholeInView(label, scroll, &why), qPrintable(why));
    }
    // The claim (the lesson's own text) gives way first: it stays in the headline's tooltip.
    if (!view->claimLabel()->isVisible()) QVERIFY(view->headlineLabel()->toolTip().contains(QStringLiteral("16-bit")));
    // Still projector type: the runs' lines in the application's font (x1.5), the criterion and
    // the note no smaller than 0.9 of it.
    QVERIFY(view->findingsLabel()->font().pointSizeF() >= QApplication::font().pointSizeF() - 0.01);
    for (QLabel* label : {view->criterionLabel(), view->noteLabel()})
      QVERIFY(label->font().pointSizeF() >= 0.9 * QApplication::font().pointSizeF() - 0.01);
    QVERIFY2(window()->dashboard()->height() >= 100, qPrintable(QString::number(window()->dashboard()->height())));
    // And the window did not grow past the screen's 640 to make room.
    QCOMPARE(window()->height(), 640);
    // Back at 1920x1080 x1, the claim is there again.
    window()->setPresentationScale(1.0);
    window()->resize(1920, 1080);
    QTRY_VERIFY(view->claimLabel()->isVisible());
  }

  // The same at 1280x800 x1 (the runs table below the charts: fmnist-cnn's note needed
  // scrolling) and 1920x1080: the bottom row gives the result the room it needs.
  void theWholeResultIsVisibleAtEverySize_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<double>("scale");
    QTest::newRow("1024x640 x1.5") << QSize(1024, 640) << 1.5;
    QTest::newRow("1280x800") << QSize(1280, 800) << 1.0;
    QTest::newRow("1920x1080") << QSize(1920, 1080) << 1.0;
  }
  void theWholeResultIsVisibleAtEverySize() {
    QFETCH(QSize, size);
    QFETCH(double, scale);
    QVERIFY(openSession());
    window()->resize(size);
    window()->setPresentationScale(scale);
    QVERIFY(window()->loadLesson(QStringLiteral("fmnist-cnn")));
    QApplication::processEvents();
    window()->showLessonResult(cnnResult());
    ui::LessonResultView* view = window()->lessonResultView();
    QTRY_VERIFY(view->isVisible());
    QApplication::processEvents();
    auto* scroll = view->findChild<QScrollArea*>();
    for (QLabel* label : {view->headlineLabel(), view->findingsLabel(), view->criterionLabel(), view->noteLabel()}) {
      QString why;
      QTRY_VERIFY2(wholeInView(label, scroll, &why), qPrintable(why));
    }
    QCOMPARE(window()->size(), size);
  }

  // The longest result of all: gpt-scaling's four runs, its criterion and the text it wrote,
  // over the histogram (the tallest chart panel).
  void theFourRunsOfTheLanguageModelFitToo() {
    QVERIFY(openSession());
    window()->resize(1024, 640);
    window()->setPresentationScale(1.5);
    QVERIFY(window()->loadLesson(QStringLiteral("gpt-scaling")));  // its text beside, as in class
    QApplication::processEvents();
    ui::LessonResult r;
    r.lesson = QStringLiteral("gpt-scaling");
    r.title = QStringLiteral("Loss scaling saves the language model");
    r.claim = QStringLiteral("A language model's gradients, made this small, round to zero in fp16: without loss "
                             "scaling it never learns, while dynamic loss scaling keeps them and trains as fp32 (and "
                             "bf16, with no scaler) does.");
    const char* labels[] = {"fp32", "fp16_noscale", "fp16_dynamic", "bf16"};
    const char* zero[] = {"0%", "100%", "0.00%", "0%"};
    for (int i = 0; i < 4; ++i)
      r.findings.append({i + 1, QString::fromLatin1(labels[i]), ui::runColor(i),
                         QStringLiteral("%1 of c_attn.weight's gradients zero, final loss 4.994").arg(QString::fromLatin1(zero[i]))});
    r.verdict = ui::LessonResult::Verdict::Confirmed;
    r.criterion = QStringLiteral("unscaled, 100% of the gradients zero (50% or more expected) and a loss of 5.473 "
                                 "against fp32's 2.994; with dynamic scaling 0.00% zero (5% or less) and a loss of "
                                 "2.994, within 10% of fp32's");
    r.note = QStringLiteral("fp32 wrote: “%1…”").arg(QString(99, QLatin1Char('e')).replace(QStringLiteral("eeeee"), QStringLiteral("eeee ")));
    r.chart = QStringLiteral("histogram");
    window()->showLessonResult(r);
    ui::LessonResultView* view = window()->lessonResultView();
    QTRY_VERIFY(view->isVisible());
    QApplication::processEvents();
    auto* scroll = view->findChild<QScrollArea*>();
    for (QLabel* label : {view->headlineLabel(), view->findingsLabel(), view->criterionLabel(), view->noteLabel()}) {
      QString why;
      QTRY_VERIFY2(wholeInView(label, scroll, &why), qPrintable(why));
    }
    QCOMPARE(window()->height(), 640);
  }

  // Item 2: the tool bar's texts are whole at x1.5 ("full spee", "600/6").
  void theToolBarTextIsWholeAtPresentationScale() {
    QVERIFY(openSession());
    window()->resize(1024, 640);
    window()->setPresentationScale(1.5);
    QApplication::processEvents();
    auto* pace = window()->speedControl()->findChild<QLabel*>(QStringLiteral("paceLabel"));
    QVERIFY(pace);
    QTRY_VERIFY2(pace->width() >= pace->fontMetrics().horizontalAdvance(pace->text()),
                 qPrintable(QStringLiteral("%1 px for '%2' (%3 px)")
                                .arg(pace->width())
                                .arg(pace->text())
                                .arg(pace->fontMetrics().horizontalAdvance(pace->text()))));
  }
};

QTEST_MAIN(TestLessonReadability)
#include "tst_lesson_readability.moc"
