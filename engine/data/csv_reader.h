// A user's small numeric table as a classification data set.
//
// Format: comma-separated (';' or tab when the first line has no comma), optional header row,
// fields may be "quoted", blank lines are skipped, UTF-8 BOM and CRLF are accepted. One column
// holds the class; all others must be finite numbers and become the features (shape {n}).
// The header is detected rather than declared: the first row is a header when it names the
// label column, is entirely non-numeric, or has a text field where the second row has a number.
#pragma once

#include <string>

#include "engine/data/dataset.h"

namespace amp {

// labelColumn: header name, or 0-based index (negative counts from the end); empty = last.
// Labels that are all non-negative integers are class ids (numClasses = max + 1, names "0",
// "1", ...); otherwise each distinct text is a class, numbered in order of first appearance.
// The whole table comes back as one Dataset named after the file, in file order.
// Errors are DataErrors like "iris.csv:17: expected 5 fields, found 4".
// header: "auto" (line 1 is a header when every field is a name, or it holds the label column's
// name; data when its fields are numbers, or names only in the label column (class names);
// anything else, and a line of column numbers 0,1,2,... or 1,2,3,..., is refused as ambiguous,
// naming data.header), "yes" or "no".
Dataset readCsvDataset(const std::string& path, const std::string& labelColumn = {},
                       const std::string& header = "auto");

// "iris" for "/data/iris.csv": the base of the data set names.
std::string csvBaseName(const std::string& path);

}  // namespace amp
