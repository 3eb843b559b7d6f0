// TensorBoard log folders as runs, so that a user's existing runs (PyTorch's SummaryWriter,
// Lightning, TensorFlow, or AMP Studio's own export) can be compared with AMP Studio's. Every
// folder holding event files is one run (its path below the log folder is its name), its files
// read in name order as TensorBoard does.
//
// What is read: AMP Studio's own "ampstudio/..." lines when present (an exact round trip of
// tensorboard_export.h); otherwise scalars by their usual tags (loss, loss scale, gradient norm,
// learning rate, test loss and accuracy, step time, throughput, skipped steps), as simple values
// or scalar float tensors, and histograms (value buckets re-binned by binary exponent). Tags
// that match nothing are listed in the run's events and warnings and kept, with their values, in
// its summary as "imported_scalars": never dropped silently.
#pragma once

#include <QString>
#include <map>
#include <string>
#include <vector>

#include "engine/io/run_record.h"

namespace amp {

// Whether `dir` (or a folder below it, down to a few levels) holds TensorBoard event files.
bool isTensorBoardFolder(const QString& dir);

// One run from the bytes of its event files (name -> bytes, read in name order). `where` names
// the folder in messages; `runName` becomes the run's name unless the files carry AMP Studio's.
// Throws RunRecordError naming the file and record for a bad CRC, a huge length, a record that is
// no Event, or an unknown file version; a last record cut short is a warning.
RunRecord tensorBoardRunFromFiles(const std::map<QString, std::string>& files, const QString& where,
                                  const QString& runName);

// Every run below `dir`. Throws RunRecordError when there is none or one does not load.
std::vector<RunRecord> loadTensorBoardFolder(const QString& dir);

// What a folder given as a run holds: AMP Studio run folders (loadRunFolders), or, when there is
// no run of ours in it or one level down but event files below it, a TensorBoard log folder.
std::vector<RunRecord> loadRunsOrTensorBoard(const QString& dir);

}  // namespace amp
