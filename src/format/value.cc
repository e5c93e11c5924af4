#include "ferry/format/value.h"

#include <array>

namespace ferry {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 11> kDTypes = {{
    {DType::kUInt8, "uint8", 1},
    {DType::kInt8, "int8", 1},
    {DType::kUInt16, "uint16", 2},
    {DType::kInt16, "int16", 2},
    {DType::kFloat16, "float16", 2},
    {DType::kUInt32, "uint32", 4},
    {DType::kInt32, "int32", 4},
    {DType::kFloat32, "float32", 4},
    {DType::kUInt64, "uint64", 8},
    {DType::kInt64, "int64", 8},
    {DType::kFloat64, "float64", 8},
}};

const DTypeInfo& Info(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  return kDTypes[0];  // unreachable for valid enumerators
}

}  // namespace

std::string_view DTypeName(DType dtype) { return Info(dtype).name; }

size_t DTypeSize(DType dtype) { return Info(dtype).size; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<DType> DTypeFromCode(uint8_t code) {
  for (const auto& info : kDTypes) {
    if (static_cast<uint8_t>(info.dtype) == code) return info.dtype;
  }
  return std::nullopt;
}

std::string_view ValueKindName(const Value& value) {
  static constexpr std::array<std::string_view, std::variant_size_v<ValueVariant>> kNames = {
      "None",  "bool", "int",         "unsigned int", "float",     "str",
      "bytes", "json", "number text", "ndarray",      "pil image", "list"};
  return kNames[value.index()];
}

}  // namespace ferry
