#include "engine/io/json_number_scan.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <set>

#include "engine/config/config_schema.h"

namespace amp {

namespace {

// A recursive walk over valid JSON (QJsonDocument checked it first, so malformed text need not
// be reported here, only not overrun).
class Scanner {
 public:
  explicit Scanner(std::string_view s) : m_s(s) {}

  JsonNumberTexts run() {
    skipSpace();
    if (peek() == '{') object("");
    return std::move(m_out);
  }

 private:
  char peek() const { return m_i < m_s.size() ? m_s[m_i] : '\0'; }
  void skipSpace() {
    while (m_i < m_s.size() && (m_s[m_i] == ' ' || m_s[m_i] == '\t' || m_s[m_i] == '\n' || m_s[m_i] == '\r'))
      ++m_i;
  }

  // A string literal, decoded (escapes through Qt, which has just accepted them).
  std::string string() {
    const std::size_t start = m_i++;
    bool escaped = false;
    while (m_i < m_s.size() && m_s[m_i] != '"') {
      if (m_s[m_i] == '\\') {
        escaped = true;
        ++m_i;
      }
      ++m_i;
    }
    ++m_i;
    const std::string_view raw = m_s.substr(start, m_i - start);
    if (!escaped) return std::string(raw.substr(1, raw.size() - 2));
    const QJsonDocument d = QJsonDocument::fromJson(QByteArray("[") + QByteArray(raw.data(), qsizetype(raw.size())) + "]");
    return d.array().at(0).toString().toStdString();
  }

  std::string scalarText() {
    const std::size_t start = m_i;
    while (m_i < m_s.size() && m_s[m_i] != ',' && m_s[m_i] != '}' && m_s[m_i] != ']' &&
           m_s[m_i] != ' ' && m_s[m_i] != '\t' && m_s[m_i] != '\n' && m_s[m_i] != '\r')
      ++m_i;
    return std::string(m_s.substr(start, m_i - start));
  }

  void claim(const std::string& key) {
    if (!m_keys.insert(key).second)
      throw ConfigError(key + ": given twice (once would be kept silently; say it once)");
  }

  void value(const std::string& key) {
    skipSpace();
    const char c = peek();
    if (c == '{') return object(key + ".");
    claim(key);
    if (c == '[') return list(key);
    if (c == '"') {
      string();
      return;
    }
    const std::string text = scalarText();
    if (!text.empty() && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9')))
      m_out.scalars[key] = text;
  }

  void list(const std::string& key) {
    ++m_i;  // '['
    std::vector<std::string> items;
    for (skipSpace(); peek() != ']' && m_i < m_s.size();) {
      if (peek() == '"') items.push_back(string());
      else if (peek() == '{' || peek() == '[') return skipNested();  // not a list of scalars
      else items.push_back(scalarText());
      skipSpace();
      if (peek() == ',') ++m_i;
      skipSpace();
    }
    ++m_i;
    m_out.lists[key] = std::move(items);
  }

  void skipNested() {
    int depth = 0;
    for (; m_i < m_s.size(); ++m_i) {
      const char c = m_s[m_i];
      if (c == '"') {
        string();
        --m_i;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && depth-- == 0) {
        ++m_i;
        return;
      }
    }
  }

  void object(const std::string& prefix) {
    ++m_i;  // '{'
    std::set<std::string> here;  // {"scaler": {...}, "scaler": {...}}: Qt kept the last object
    for (skipSpace(); peek() == '"';) {
      const std::string key = prefix + string();
      if (!here.insert(key).second)
        throw ConfigError(key + ": given twice (once would be kept silently; say it once)");
      skipSpace();
      ++m_i;  // ':'
      value(key);
      skipSpace();
      if (peek() == ',') ++m_i;
      skipSpace();
    }
    ++m_i;  // '}'
  }

  std::string_view m_s;
  std::size_t m_i = 0;
  std::set<std::string> m_keys;
  JsonNumberTexts m_out;
};

}  // namespace

JsonNumberTexts scanJsonNumbers(std::string_view json) { return Scanner(json).run(); }

}  // namespace amp
