// ampstudio: the desktop app. Options:
//   --lesson NAME        load a lesson into the experiment panel (see the Lessons panel)
//   --screenshot OUT.png run the lesson until its runs end, save a PNG of the window, exit
//   --steps N            override train.steps of the lesson's runs
//   --size WxH           window size (screenshots at 1024x640, 1280x800, 1920x1080)
//   --dark               dark palette (screenshots)
//   --scale F            presentation scale, 1 = normal (as Ctrl+= / Ctrl+- set it)
//   FILE                 open an experiment (.ampx), a run bundle, a folder of CLI runs or of
//                        TensorBoard logs, or a JSON config
// Works under X11/Wayland, Xvfb and QT_QPA_PLATFORM=offscreen.
#include <csignal>
#include <QApplication>
#include <QCommandLineParser>
#include <QAction>
#include <QIcon>
#include <QTimer>
#include <clocale>
#include <cstdio>
#include <cstdlib>

#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "engine/config/presets.h"
#include "engine/core/checked_file.h"
#include "engine/core/openmp_wait_policy.h"
#include "kernels/cpu/cpu_baseline.h"
#include "ui/experiment_panel.h"
#include "ui/main_window.h"
#include "ui/theme.h"

namespace {
bool haveDisplay() {
  return qEnvironmentVariableIsSet("QT_QPA_PLATFORM") || qEnvironmentVariableIsSet("DISPLAY") ||
         qEnvironmentVariableIsSet("WAYLAND_DISPLAY");
}
// The offscreen platform warns on every window resize that it cannot pass size hints on; the
// warning says nothing about this program, so screenshot runs stay quiet.
QtMessageHandler g_defaultHandler = nullptr;
void filterMessages(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (message.contains(QLatin1String("propagateSizeHints"))) return;
  g_defaultHandler(type, context, message);
}

bool wantsScreenshot(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).rfind("--screenshot", 0) == 0) return true;
  return false;
}

// --help and --version print and exit: they need no display (they said "no display" on a
// server, where a user reads them first; issue 42 item 7).
bool wantsTextOnly(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a == "--help" || a == "-h" || a == "-?" || a == "--help-all" || a == "--version" || a == "-v") return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  // Before anything else: it may execute this program again, with OpenMP's idle threads spinning
  // only briefly (engine/core/openmp_wait_policy.h), so training beside other work stays fast.
  amp::ensureShortOpenMpSpin(argv);
  // Past the file-size limit a write fails (EFBIG) and the app reports it naming the file,
  // instead of SIGXFSZ ending the app with its runs unsaved.
  std::signal(SIGXFSZ, SIG_IGN);
  if (const char* problem = amp::cpu::cpuBaselineProblem()) {  // normally refused before main
    std::fprintf(stderr, "ampstudio: %s\n", problem);
    return 2;
  }
  // Without any display Qt aborts; a screenshot needs none, so draw offscreen.
  if (!haveDisplay()) {
    if (!wantsScreenshot(argc, argv) && !wantsTextOnly(argc, argv)) {
      std::fprintf(stderr, "ampstudio: no display (DISPLAY/WAYLAND_DISPLAY unset). Run it under a "
                           "desktop or xvfb-run, set QT_QPA_PLATFORM=offscreen, or use ampstudio-cli.\n");
      return 2;
    }
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  g_defaultHandler = qInstallMessageHandler(filterMessages);
  QApplication app(argc, argv);
  // QApplication adopts the user's locale; the engine's config parser (strtod) and the number
  // inspector expect "0.001", not "0,001": keep numbers in the C locale.
  std::setlocale(LC_NUMERIC, "C");
  QApplication::setApplicationName(QStringLiteral("AMP Studio"));
  QApplication::setOrganizationName(QStringLiteral("AMP Studio"));
  QApplication::setApplicationVersion(QStringLiteral(AMP_PROJECT_VERSION_TEXT));
  QApplication::setDesktopFileName(QStringLiteral("org.ampstudio.AmpStudio"));  // resources/org.ampstudio.AmpStudio.desktop
  QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("ampstudio")));  // when installed

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("AMP Studio: explore automatic mixed precision training"));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption lesson(QStringLiteral("lesson"),
                                  QStringLiteral("Load a lesson: %1.").arg(QString::fromStdString(amp::presetNames())),
                                  QStringLiteral("NAME"));
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Run the lesson to its end (or open FILE), save a PNG of the window and exit."),
                                      QStringLiteral("OUT.png"));
  const QCommandLineOption steps(QStringLiteral("steps"), QStringLiteral("Override train.steps of the lesson's runs."),
                                 QStringLiteral("N"));
  const QCommandLineOption timeout(QStringLiteral("timeout"),
                                   QStringLiteral("Screenshot mode: take it after this many seconds even "
                                                  "if runs are still training (default 600)."),
                                   QStringLiteral("S"), QStringLiteral("600"));
  const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1024x640."),
                                QStringLiteral("WxH"));
  const QCommandLineOption dark(QStringLiteral("dark"), QStringLiteral("Start with the dark palette."));
  const QCommandLineOption scale(QStringLiteral("scale"),
                                 QStringLiteral("Presentation scale: 1 is normal, 1.5 for a projector."),
                                 QStringLiteral("F"));
  parser.addOptions({lesson, screenshot, steps, timeout, size, dark, scale});
  parser.addPositionalArgument(QStringLiteral("file"),
                               QStringLiteral("What to open: an experiment (.ampx), a run bundle (.amprun.zip), a "
                                              "folder of ampstudio-cli runs, a TensorBoard log folder (event files "
                                              "of PyTorch's SummaryWriter, imported), or a JSON config."),
                               QStringLiteral("[FILE]"));
  parser.process(app);

  bool ok = true;
  const qint64 stepOverride = parser.isSet(steps) ? parser.value(steps).toLongLong(&ok) : 0;
  if (!ok || stepOverride < 0) {
    std::fprintf(stderr, "ampstudio: --steps expects a positive integer, got '%s'\n", qPrintable(parser.value(steps)));
    return 2;
  }
  QSize windowSize;
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split(QLatin1Char('x'));
    bool okW = false, okH = false;
    if (wh.size() == 2) windowSize = QSize(wh[0].toInt(&okW), wh[1].toInt(&okH));
    if (!okW || !okH || windowSize.width() < 320 || windowSize.height() < 240) {
      std::fprintf(stderr, "ampstudio: --size expects WIDTHxHEIGHT of at least 320x240, got '%s'\n",
                   qPrintable(parser.value(size)));
      return 2;
    }
  }
  double presentationScale = 0;
  if (parser.isSet(scale)) {
    presentationScale = parser.value(scale).toDouble(&ok);
    if (!ok || presentationScale < 0.5 || presentationScale > 4) {
      std::fprintf(stderr, "ampstudio: --scale expects a number from 0.5 to 4, got '%s'\n",
                   qPrintable(parser.value(scale)));
      return 2;
    }
  }
  const bool shot = parser.isSet(screenshot);
  const QString fileToOpen = parser.positionalArguments().value(0);
  if (shot && !parser.isSet(lesson) && fileToOpen.isEmpty()) {
    std::fprintf(stderr, "ampstudio: --screenshot needs --lesson NAME (%s) or a FILE to open\n",
                 amp::presetNames().c_str());
    return 2;
  }
  if (parser.isSet(lesson) && !amp::findPreset(parser.value(lesson).toStdString())) {
    std::fprintf(stderr, "ampstudio: unknown lesson '%s' (lessons: %s)\n", qPrintable(parser.value(lesson)),
                 amp::presetNames().c_str());
    return 2;
  }

  if (shot) {
    // Checked before the lesson runs (minutes), not after: a missing folder or a FIFO there.
    try {
      amp::checkOutputFile(parser.value(screenshot).toStdString());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ampstudio: --screenshot %s\n", e.what());
      return 2;
    }
  }

  amp::ui::applyTheme(amp::ui::Theme::Light);
  // Screenshots start from a clean state: no restored layout, palette or last experiment.
  amp::gui::GuiSession session(/*persistSettings=*/!shot);
  amp::ui::MainWindow* window = session.window();
  if (windowSize.isValid()) window->resize(windowSize);
  if (parser.isSet(dark)) window->actions().dark->setChecked(true);
  if (presentationScale > 0) window->setPresentationScale(presentationScale);
  window->show();

  if (shot) {
    QObject::connect(&session, &amp::gui::GuiSession::screenshotSaved, &app, [](bool saved, const QString& path) {
      // On failure `path` is the one-line reason, naming the file.
      std::fprintf(saved ? stdout : stderr, saved ? "screenshot: %s\n" : "ampstudio: %s\n", qPrintable(path));
      QApplication::exit(saved ? 0 : 1);
    });
    const int limitS = parser.value(timeout).toInt();
    QTimer::singleShot(0, &session, [&] {
      if (!parser.isSet(lesson)) {  // a file's screenshot: what a file manager's "open" shows
        QString why;
        if (!session.startScreenshotOfFile(fileToOpen, parser.value(screenshot), &why)) {
          std::fprintf(stderr, "ampstudio: %s\n", qPrintable(why));
          QApplication::exit(2);
        }
        return;
      }
      if (!session.startScreenshot(parser.value(lesson), parser.value(screenshot), stepOverride)) {
        std::fprintf(stderr, "ampstudio: lesson '%s' cannot run: %s\n", qPrintable(parser.value(lesson)),
                     qPrintable(window->experiment()->problem()));
        QApplication::exit(2);
      }
    });
    if (limitS > 0)
      QTimer::singleShot(limitS * 1000, &session, [&] { session.controller()->stopAll(); });
  } else if (!fileToOpen.isEmpty()) {
    QString why;
    if (!session.openFromCommandLine(fileToOpen, &why)) std::fprintf(stderr, "ampstudio: %s\n", qPrintable(why));
  } else if (parser.isSet(lesson)) {
    window->loadLesson(parser.value(lesson));
    if (stepOverride > 0) window->experiment()->setFieldValue("train.steps", std::to_string(stepOverride));
  } else {
    session.restoreLastSession();  // the runs and event log this app showed when it last closed
  }
  return app.exec();
}
