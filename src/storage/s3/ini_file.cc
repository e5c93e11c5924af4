#include "storage/s3/ini_file.h"

#include <fmt/format.h>

#include <cctype>

namespace ferry::internal_s3 {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string CollapseSpaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : Trim(s)) {
    if (IsSpace(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Drops an inline comment: '#' or ';' preceded by whitespace.
std::string_view StripInlineComment(std::string_view value) {
  for (size_t i = 1; i < value.size(); ++i) {
    if ((value[i] == '#' || value[i] == ';') && IsSpace(value[i - 1])) {
      return Trim(value.substr(0, i));
    }
  }
  return value;
}

}  // namespace

const std::string* IniFile::Find(std::string_view section, std::string_view name) const {
  const Section* s = FindSection(section);
  if (s == nullptr) return nullptr;
  auto it = s->find(name);
  return it == s->end() ? nullptr : &it->second;
}

const IniFile::Section* IniFile::FindSection(std::string_view section) const {
  auto it = sections_.find(section);
  return it == sections_.end() ? nullptr : &it->second;
}

Result<IniFile> ParseIni(std::string_view text, std::string_view file_name) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  IniFile file;
  IniFile::Section* section = nullptr;
  std::string parent;  // the name whose nested settings the indented lines below give
  int line_number = 0;
  auto error = [&](std::string_view what) {
    // Never the line itself: it may hold a secret.
    return DataLossError(fmt::format("{}:{}: {}", file_name, line_number, what));
  };
  while (!text.empty()) {
    ++line_number;
    const size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool indented = IsSpace(raw.front());

    if (line.front() == '[') {
      const size_t close = line.find(']');
      if (close == std::string_view::npos) return error("a section header without ']'");
      const std::string name = CollapseSpaces(line.substr(1, close - 1));
      if (name.empty()) return error("an empty section name");
      section = &file.sections_[name];
      parent.clear();
      continue;
    }

    const size_t sep = line.find_first_of("=:");
    if (sep == std::string_view::npos) return error("expected 'name = value'");
    const std::string name = Lower(Trim(line.substr(0, sep)));
    if (name.empty()) return error("a setting without a name");
    const std::string_view value = StripInlineComment(Trim(line.substr(sep + 1)));
    if (section == nullptr) return error("a setting before the first [section]");
    if (indented && !parent.empty()) {
      (*section)[parent + "." + name] = std::string(value);
      continue;
    }
    (*section)[name] = std::string(value);
    // "s3 =" with nothing after it opens a block of nested settings.
    parent = value.empty() ? name : std::string();
  }
  return file;
}

}  // namespace ferry::internal_s3
