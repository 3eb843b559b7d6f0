// ampstudio-cli export --weights fp32|fp16|bf16: a run's weights alone, in one dtype, as a
// safetensors file PyTorch loads (safetensors.torch.load_file + load_state_dict), from the run
// folder's latest checkpoint or a checkpoint named with --checkpoint.
#include <QFileInfo>
#include <cstdio>

#include "app/cli_experiment.h"
#include "app/cli_export_charts.h"
#include "app/cli_output_folder.h"
#include "engine/io/checkpoint.h"
#include "engine/io/run_record.h"
#include "engine/io/weights_export.h"

namespace amp::cli {

int exportWeightsFile(const std::vector<std::string>& runDirs, const std::string& checkpoint,
                      const std::string& dtypeText, const std::string& out) {
  const DType dtype = dtypeText == "fp32" ? DType::F32 : dtypeText == "fp16" ? DType::F16 : DType::BF16;
  std::string source = checkpoint;
  try {
    if (dtypeText != "fp32" && dtypeText != "fp16" && dtypeText != "bf16")
      throw UsageError("--weights: expected fp32, fp16 or bf16, got " + shownValue(dtypeText));
    if (out.empty()) throw UsageError("--weights needs --output FILE.safetensors");
    if (source.empty()) {
      if (runDirs.size() != 1) throw UsageError("--weights needs one --run DIR or a --checkpoint FILE");
      const auto runs = loadRunFolders(QString::fromStdString(runDirs.front()));
      if (runs.size() != 1)
        throw UsageError("--run " + runDirs.front() + ": holds " + std::to_string(runs.size()) +
                         " runs; name one of them (or a --checkpoint)");
      if (runs.front().checkpointPath.isEmpty())
        throw UsageError("--run " + runDirs.front() + ": no checkpoint in its checkpoints/ folder "
                         "(run with --set checkpoint.at_end=true)");
      source = runs.front().checkpointPath.toStdString();
    }
    checkOutputFile(out);
    const SafetensorsFile model = checkpointModel(QString::fromStdString(source));
    const QByteArray bytes =
        exportWeights(model.tensors, dtype, QFileInfo(QString::fromStdString(source)).fileName().toStdString());
    const ExportRounding r = exportRounding(model.tensors, dtype);
    if (r.overflowed > 0)
      printError("export", "warning: " + std::to_string(r.overflowed) + " weight value(s) beyond " +
                               dtypeText + "'s range became inf (first in '" + r.firstOverflow + "')");
    if (!writeOutputFile("export", out, std::string_view(bytes.constData(), std::size_t(bytes.size()))))
      return 2;
    std::printf("%zu tensors, %s (%s) in %s, from %s\n", model.tensors.size(),
                formatBytes(bytes.size()).c_str(), dtypeText.c_str(), out.c_str(), source.c_str());
    return 0;
  } catch (const std::exception& e) {  // UsageError, RunRecordError, CheckpointError, SafetensorsError
    printError("export", e.what());
    return 2;
  }
}

}  // namespace amp::cli
