// A small element tree parsed with expat, for the XML that S3 and Azure answer with (listings,
// error bodies, multipart replies). Limits keep hostile input cheap: at most 64 levels deep and
// 32 MiB of text; entity declarations (and so entity expansion bombs) are refused.
//
// Thread-safety: ParseXml is reentrant; XmlElement is a value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry {

struct XmlElement {
  std::string name;  // as written, e.g. "ListBucketResult" (namespace prefixes are kept)
  std::string text;  // the element's own character data, concatenated
  std::vector<XmlElement> children;

  /// The first child called `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  /// Every child called `name`, in document order.
  std::vector<const XmlElement*> Children(std::string_view name) const;
  /// The text of the first child called `name`, or "" when there is none.
  std::string ChildText(std::string_view name) const;
};

/// The root element. kDataLoss (with expat's reason and line) when `text` is not well-formed XML.
Result<XmlElement> ParseXml(std::string_view text);

/// Escapes &, <, >, " and ' for element text or attribute values.
std::string XmlEscape(std::string_view text);

}  // namespace ferry
