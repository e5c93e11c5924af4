#include "storage/ini_file.h"

#include <fmt/format.h>

#include "base/ascii.h"

namespace ferry::internal_storage {
namespace {

// Drops an inline comment: '#' or ';' preceded by whitespace.
std::string_view StripInlineComment(std::string_view value) {
  for (size_t i = 1; i < value.size(); ++i) {
    if ((value[i] == '#' || value[i] == ';') && IsAsciiWhitespace(value[i - 1])) {
      return TrimAsciiWhitespace(value.substr(0, i));
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
    const std::string_view line = TrimAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool indented = IsAsciiWhitespace(raw.front());

    if (line.front() == '[') {
      const size_t close = line.find(']');
      if (close == std::string_view::npos) return error("a section header without ']'");
      const std::string name = CollapseAsciiWhitespace(line.substr(1, close - 1));
      if (name.empty()) return error("an empty section name");
      section = &file.sections_[name];
      parent.clear();
      continue;
    }

    const size_t sep = line.find_first_of("=:");
    if (sep == std::string_view::npos) return error("expected 'name = value'");
    const std::string name = AsciiLower(TrimAsciiWhitespace(line.substr(0, sep)));
    if (name.empty()) return error("a setting without a name");
    const std::string_view value = StripInlineComment(TrimAsciiWhitespace(line.substr(sep + 1)));
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

}  // namespace ferry::internal_storage
