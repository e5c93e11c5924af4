#include "storage/xml/xml_tree.h"

#include <expat.h>
#include <fmt/format.h>

#include <memory>

namespace ferry {
namespace {

constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxBytes = size_t{32} << 20;

struct ParseState {
  XML_Parser parser = nullptr;
  XmlElement root;
  std::vector<XmlElement*> stack;
  bool have_root = false;
  std::string error;
};

void Stop(ParseState* s, std::string error) {
  if (s->error.empty()) s->error = std::move(error);
  XML_StopParser(s->parser, XML_FALSE);
}

void XMLCALL OnStart(void* data, const XML_Char* name, const XML_Char**) {
  auto* s = static_cast<ParseState*>(data);
  if (s->stack.size() >= kMaxDepth) return Stop(s, "XML nested more than 64 levels deep");
  if (s->stack.empty()) {
    if (s->have_root) return Stop(s, "XML has more than one root element");
    s->have_root = true;
    s->root.name = name;
    s->stack.push_back(&s->root);
    return;
  }
  XmlElement& parent = *s->stack.back();
  parent.children.push_back(XmlElement{name, {}, {}});
  s->stack.push_back(&parent.children.back());
}

void XMLCALL OnEnd(void* data, const XML_Char*) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->stack.empty()) s->stack.pop_back();
}

void XMLCALL OnText(void* data, const XML_Char* text, int len) {
  auto* s = static_cast<ParseState*>(data);
  if (!s->stack.empty()) s->stack.back()->text.append(text, static_cast<size_t>(len));
}

// Any DTD entity declaration could be the start of an expansion bomb; service XML has none.
void XMLCALL OnEntityDecl(void* data, const XML_Char*, int, const XML_Char*, int, const XML_Char*,
                          const XML_Char*, const XML_Char*, const XML_Char*) {
  Stop(static_cast<ParseState*>(data), "XML declares entities, which are not accepted");
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child) const {
  for (const auto& c : children) {
    if (c.name == child) return &c;
  }
  return nullptr;
}

std::vector<const XmlElement*> XmlElement::Children(std::string_view child) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children) {
    if (c.name == child) out.push_back(&c);
  }
  return out;
}

std::string XmlElement::ChildText(std::string_view child) const {
  const XmlElement* c = Child(child);
  return c == nullptr ? std::string() : c->text;
}

Result<XmlElement> ParseXml(std::string_view text) {
  if (text.size() > kMaxBytes) {
    return DataLossError(
        fmt::format("XML of {} bytes is larger than the 32 MiB accepted", text.size()));
  }
  std::unique_ptr<std::remove_pointer_t<XML_Parser>, void (*)(XML_Parser)> parser(
      XML_ParserCreate("UTF-8"), XML_ParserFree);
  if (!parser) return ResourceExhaustedError("cannot allocate an XML parser");
  ParseState state;
  state.parser = parser.get();
  XML_SetUserData(parser.get(), &state);
  XML_SetElementHandler(parser.get(), OnStart, OnEnd);
  XML_SetCharacterDataHandler(parser.get(), OnText);
  XML_SetEntityDeclHandler(parser.get(), OnEntityDecl);
  const auto status = XML_Parse(parser.get(), text.data(), static_cast<int>(text.size()), XML_TRUE);
  if (!state.error.empty()) return DataLossError(state.error);
  if (status != XML_STATUS_OK) {
    return DataLossError(fmt::format("XML is malformed at line {}: {}",
                                     XML_GetCurrentLineNumber(parser.get()),
                                     XML_ErrorString(XML_GetErrorCode(parser.get()))));
  }
  if (!state.have_root) return DataLossError("XML has no root element");
  return std::move(state.root);
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ferry
