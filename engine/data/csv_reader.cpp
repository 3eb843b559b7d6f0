// CSV parsing and validation. Tables are small (teaching sets, a few MB at most), so the file
// is read whole and every row is kept as strings until the columns are known.
#include "engine/data/csv_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace amp {
namespace {

// More classes than this means the "label" column is really a measurement (a price, an id).
constexpr std::int64_t kMaxClasses = 1000;

struct Row {
  int line = 0;  // 1-based line in the file, for messages
  std::vector<std::string> fields;
};

std::string trim(std::string_view s) {
  const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return std::string(s);
}

bool parseDouble(const std::string& s, double& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;  // from_chars rejects a leading '+', spreadsheets write it
  const auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

bool parseClassId(const std::string& s, std::int64_t& out) {
  const char* e = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), e, out);
  return !s.empty() && ec == std::errc() && p == e && out >= 0;
}

class CsvParser {
 public:
  explicit CsvParser(std::string path) : m_path(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const { throw DataError(m_path + ": " + what); }
  [[noreturn]] void fail(int line, const std::string& what) const {
    throw DataError(m_path + ":" + std::to_string(line) + ": " + what);
  }

  std::vector<Row> readRows() {
    std::error_code ec;
    // A FIFO would block the read and /dev/zero never end it: only regular files are data.
    if (!std::filesystem::exists(m_path, ec)) fail("no such file");
    if (!std::filesystem::is_regular_file(m_path, ec)) fail("not a regular file (a folder, device or pipe)");
    std::ifstream in(m_path, std::ios::binary);
    if (!in) fail("cannot open for reading");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // Excel's UTF-8 BOM

    std::vector<Row> rows;
    std::size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      ++line;
      const std::string_view raw(text.data() + pos, end - pos);
      pos = end + 1;
      if (trim(raw).empty()) continue;
      if (rows.empty()) m_delim = detectDelimiter(raw);
      rows.push_back({line, splitFields(raw, line)});
    }
    if (rows.empty()) fail("file is empty");
    return rows;
  }

 private:
  static char detectDelimiter(std::string_view firstLine) {
    for (char d : {',', ';', '\t'})
      if (firstLine.find(d) != std::string_view::npos) return d;
    return ',';
  }

  // Fields split on the delimiter outside double quotes ("" inside quotes is one quote).
  std::vector<std::string> splitFields(std::string_view raw, int line) const {
    std::vector<std::string> fields;
    std::string cur;
    bool quoted = false, wasQuoted = false;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (quoted) {
        if (c == '"' && i + 1 < raw.size() && raw[i + 1] == '"') cur += '"', ++i;
        else if (c == '"') quoted = false;
        else cur += c;
      } else if (c == '"' && trim(cur).empty()) {
        quoted = wasQuoted = true;
        cur.clear();
      } else if (c == m_delim) {
        fields.push_back(wasQuoted ? cur : trim(cur));
        cur.clear();
        wasQuoted = false;
      } else if (!(wasQuoted && (c == ' ' || c == '\r'))) {
        cur += c;
      }
    }
    if (quoted) fail(line, "unterminated quoted field");
    fields.push_back(wasQuoted ? cur : trim(cur));
    return fields;
  }

  std::string m_path;
  char m_delim = ',';
};

bool isNumber(const std::string& s) {
  double d;
  return parseDouble(s, d);
}

// Whether the fields are the column numbers 0..n-1 or 1..n: a header of numbers, or data that
// happens to count? Nothing in the line says, so auto refuses it.
bool looksLikeColumnNumbers(const std::vector<std::string>& f) {
  for (int base : {0, 1}) {
    bool all = true;
    for (std::size_t j = 0; j < f.size() && all; ++j) all = f[j] == std::to_string(j + base);
    if (all) return true;
  }
  return false;
}

bool detectHeader(const CsvParser& p, const std::vector<Row>& rows, const std::string& labelColumn,
                  const std::string& mode) {
  if (mode == "yes") return true;
  if (mode == "no") return false;
  const auto& first = rows[0].fields;
  if (!labelColumn.empty() && std::find(first.begin(), first.end(), labelColumn) != first.end())
    return true;
  if (std::none_of(first.begin(), first.end(), isNumber)) return true;
  const std::size_t n = first.size();
  if (std::all_of(first.begin(), first.end(), isNumber)) {
    if (n >= 2 && looksLikeColumnNumbers(first))
      p.fail(rows[0].line, "reads as column numbers (" + first[0] + ", " + first[1] +
                               ", ...) or as data; set data.header=yes or data.header=no");
    return false;
  }
  // Names beside numbers: a data row when the names sit in the label column alone (class names,
  // as in Iris); anything else could be a header with a numeric name or a row with a bad value.
  std::size_t labelAt = n - 1;
  std::int64_t idx = 0;
  const char* e = labelColumn.data() + labelColumn.size();
  if (!labelColumn.empty()) {
    if (const auto [ptr, ec] = std::from_chars(labelColumn.data(), e, idx); ec == std::errc() && ptr == e)
      labelAt = static_cast<std::size_t>(idx < 0 ? idx + static_cast<std::int64_t>(n) : idx);
  }
  for (std::size_t j = 0; j < n; ++j)  // (an empty field is the data row's error, told later)
    if (j != labelAt && !first[j].empty() && !isNumber(first[j]))
      p.fail(rows[0].line, "field " + std::to_string(j + 1) + " ('" + first[j].substr(0, 40) +
                               "') is not a number while others are: a header or a data row? set "
                               "data.header=yes or data.header=no");
  return false;
}

std::size_t resolveLabelColumn(const CsvParser& p, const std::vector<std::string>* header,
                               std::size_t ncols, const std::string& spec) {
  if (spec.empty()) return ncols - 1;
  if (header) {
    // Two columns of that name: which one is the label is a guess, so it is refused.
    std::vector<std::size_t> named;
    for (std::size_t j = 0; j < ncols; ++j)
      if ((*header)[j] == spec) named.push_back(j);
    if (named.size() > 1)
      p.fail("label column '" + spec + "' names columns " + std::to_string(named[0]) + " and " +
             std::to_string(named[1]) + " of the header; give the label column by its index");
    if (named.size() == 1) return named[0];
  }
  std::int64_t idx = 0;
  const char* e = spec.data() + spec.size();
  if (const auto [ptr, ec] = std::from_chars(spec.data(), e, idx); ec == std::errc() && ptr == e) {
    if (idx < 0) idx += static_cast<std::int64_t>(ncols);
    if (idx < 0 || idx >= static_cast<std::int64_t>(ncols))
      p.fail("label column " + spec + " is out of range (the file has " + std::to_string(ncols) +
             " columns, 0.." + std::to_string(ncols - 1) + ")");
    return static_cast<std::size_t>(idx);
  }
  if (!header)
    p.fail("label column '" + spec + "' is given by name, but the file has no header row");
  std::string names;
  for (const auto& h : *header) names += (names.empty() ? "" : ", ") + h;
  p.fail("label column '" + spec + "' not found in the header (columns: " + names + ")");
}

}  // namespace

std::string csvBaseName(const std::string& path) {
  const std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? "csv" : stem;
}

Dataset readCsvDataset(const std::string& path, const std::string& labelColumn,
                       const std::string& header) {
  CsvParser parser(path);
  const std::vector<Row> rows = parser.readRows();
  const bool hasHeader = detectHeader(parser, rows, labelColumn, header);
  const std::size_t ncols = rows[0].fields.size();
  const std::size_t first = hasHeader ? 1 : 0;
  if (ncols < 2)
    parser.fail("needs at least 2 columns (features and a label), found " + std::to_string(ncols));
  const std::size_t labelCol =
      resolveLabelColumn(parser, hasHeader ? &rows[0].fields : nullptr, ncols, labelColumn);
  if (rows.size() <= first) parser.fail("no data rows after the header");

  Dataset d;
  d.name = csvBaseName(path);
  d.count = static_cast<std::int64_t>(rows.size() - first);
  d.sampleShape = {static_cast<std::int64_t>(ncols - 1)};
  d.features.reserve(d.count * (ncols - 1));
  std::vector<const std::string*> rawLabels;
  std::vector<int> labelLines;
  for (std::size_t r = first; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (row.fields.size() != ncols)
      parser.fail(row.line, "expected " + std::to_string(ncols) + " fields, found " +
                                std::to_string(row.fields.size()));
    for (std::size_t j = 0; j < ncols; ++j) {
      const std::string& f = row.fields[j];
      const std::string field = "field " + std::to_string(j + 1);
      if (j == labelCol) {
        if (f.empty()) parser.fail(row.line, "label (" + field + ") is empty");
        rawLabels.push_back(&f);
        labelLines.push_back(row.line);
        continue;
      }
      double v = 0;
      if (f.empty()) parser.fail(row.line, field + " is empty");
      if (!parseDouble(f, v)) parser.fail(row.line, field + " '" + f + "' is not a number");
      if (!std::isfinite(v) || !std::isfinite(static_cast<float>(v)))
        parser.fail(row.line, field + " '" + f + "' is not a finite number (or too large for float)");
      d.features.push_back(static_cast<float>(v));
    }
  }

  // Integer class ids when every label is one; otherwise class names in order of appearance.
  std::vector<std::int64_t> ids(rawLabels.size());
  bool allIds = true;
  for (std::size_t i = 0; i < rawLabels.size() && allIds; ++i)
    allIds = parseClassId(*rawLabels[i], ids[i]);
  if (allIds) {
    std::int64_t maxId = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= kMaxClasses)
        parser.fail(labelLines[i], "label " + std::to_string(ids[i]) +
                                       " is too large for a class id (at most " +
                                       std::to_string(kMaxClasses) + " classes)");
      maxId = std::max(maxId, ids[i]);
    }
    d.numClasses = static_cast<int>(maxId + 1);
    for (int c = 0; c < d.numClasses; ++c) d.classNames.push_back(std::to_string(c));
    d.labels.assign(ids.begin(), ids.end());
  } else {
    std::map<std::string, int> classOf;
    for (std::size_t i = 0; i < rawLabels.size(); ++i) {
      auto [it, inserted] = classOf.emplace(*rawLabels[i], static_cast<int>(classOf.size()));
      if (inserted) {
        if (static_cast<std::int64_t>(classOf.size()) > kMaxClasses)
          parser.fail(labelLines[i], "label column has more than " + std::to_string(kMaxClasses) +
                                         " distinct values; is it really a class column?");
        d.classNames.push_back(*rawLabels[i]);
      }
      d.labels.push_back(it->second);
    }
    d.numClasses = static_cast<int>(d.classNames.size());
  }
  return d;
}

}  // namespace amp
