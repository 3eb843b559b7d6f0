#include "engine/io/model_files.h"

#include <QFileInfo>
#include <QTemporaryDir>

#include "engine/io/checkpoint.h"
#include "engine/io/weights_export.h"

namespace amp {

ModelFileSizes measureModelFiles(Trainer& trainer, const QString& checkpoint,
                                 const QByteArray& metricsJsonl) {
  ModelFileSizes s;
  const DType dtype = trainer.config().computeDtype();
  s.weightsDtype = std::string(dtypeName(dtype));
  // The source named as an export from the run's final checkpoint names it: the same bytes.
  s.weightsBytes =
      exportWeights(modelTensors(trainer), dtype, checkpointFileName(trainer.stepsDone()).toStdString()).size();
  if (!checkpoint.isEmpty()) {
    s.checkpointBytes = QFileInfo(checkpoint).size();
    return s;
  }
  QTemporaryDir dir;
  if (!dir.isValid())
    throw CheckpointError("checkpoint size: no temporary folder (" + dir.errorString().toStdString() + ")");
  const QString path = dir.filePath(QStringLiteral("measure.zip"));
  saveCheckpoint(trainer, path, metricsJsonl);
  s.checkpointBytes = QFileInfo(path).size();
  return s;
}

}  // namespace amp
