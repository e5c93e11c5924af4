// IniFile: the INI dialect of ~/.aws/credentials, ~/.aws/config and ~/.databrickscfg, parsed into
// sections of name = value settings.
//
// The dialect is Python configparser's, as botocore reads it: "[section]" headers, "name = value"
// or "name: value" lines, full-line comments starting with '#' or ';', blank lines anywhere,
// whitespace around everything ignored. Two extensions that real files contain are tolerated:
//   - an inline comment, when ' #' or ' ;' follows a value (no credential contains a space, so
//     this never cuts a secret short);
//   - nested settings, indented under a name with an empty value ("s3 =\n  addressing_style =
//     path"), stored as "s3.addressing_style".
// Setting names are lowercased (as configparser does); section names keep their case but runs of
// whitespace inside the brackets become one space ("[profile  dev ]" is "profile dev"). A later
// duplicate replaces an earlier one.
//
// A file of credentials is read here, so errors give the file and line number but never the text
// of the line.
//
// Thread-safety: a value; ParseIni is reentrant.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry::internal_storage {

class IniFile {
 public:
  using Section = std::map<std::string, std::string, std::less<>>;

  /// The value of `name` (lowercase) in `section`, or nullptr.
  const std::string* Find(std::string_view section, std::string_view name) const;
  /// The settings of `section`, or nullptr when the file has no such section.
  const Section* FindSection(std::string_view section) const;

  const std::map<std::string, Section, std::less<>>& sections() const { return sections_; }

 private:
  friend Result<IniFile> ParseIni(std::string_view text, std::string_view file_name);
  std::map<std::string, Section, std::less<>> sections_;
};

/// Parses `text`; `file_name` only names the file in errors ("<file>:<line>: <what>", kDataLoss).
Result<IniFile> ParseIni(std::string_view text, std::string_view file_name);

}  // namespace ferry::internal_storage
