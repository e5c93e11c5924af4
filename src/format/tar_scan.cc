#include "format/tar_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "base/ascii.h"

namespace ferry::internal_format {
namespace {

// Header field offsets and lengths (POSIX.1-1988 ustar).
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kSize = 124, kSizeLen = 12;
constexpr size_t kChecksum = 148, kChecksumLen = 8;
constexpr size_t kType = 156;
constexpr size_t kMagic = 257;
constexpr size_t kPrefix = 345, kPrefixLen = 155;

std::string_view Field(std::string_view header, size_t at, size_t len) {
  std::string_view f = header.substr(at, len);
  return f.substr(0, std::min(f.find('\0'), f.size()));
}

// An octal number, space/NUL padded, or GNU's base-256 (high bit of the first byte set).
std::optional<uint64_t> Number(std::string_view field) {
  if (!field.empty() && (static_cast<unsigned char>(field[0]) & 0x80) != 0) {
    if ((static_cast<unsigned char>(field[0]) & 0x40) != 0) return std::nullopt;  // negative
    uint64_t v = static_cast<unsigned char>(field[0]) & 0x3f;
    for (size_t i = 1; i < field.size(); ++i) {
      if (v > (UINT64_MAX >> 8)) return std::nullopt;
      v = (v << 8) | static_cast<unsigned char>(field[i]);
    }
    return v;
  }
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  uint64_t v = 0;
  bool any = false;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v > (UINT64_MAX >> 3)) return std::nullopt;
    v = (v << 3) | static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < field.size(); ++i) {
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  if (!any)
    return field.find_first_not_of(std::string_view(" \0", 2)) == std::string_view::npos
               ? std::optional<uint64_t>(0)
               : std::nullopt;
  return v;
}

bool ChecksumMatches(std::string_view header) {
  const auto stored = Number(header.substr(kChecksum, kChecksumLen));
  if (!stored) return false;
  // The sum of the header's bytes with the checksum field read as spaces; tarfile accepts the
  // sum taken over signed bytes too (some old tars).
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i) {
    const bool in_checksum = i >= kChecksum && i < kChecksum + kChecksumLen;
    const char c = in_checksum ? ' ' : header[i];
    unsigned_sum += static_cast<unsigned char>(c);
    signed_sum += static_cast<signed char>(c);
  }
  return *stored == unsigned_sum || static_cast<int64_t>(*stored) == signed_sum;
}

bool AllZero(std::string_view block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == '\0'; });
}

// PAX records: "<length> <key>=<value>\n", the length counting the whole record.
Status ParsePax(std::string_view data, std::optional<std::string>& path,
                std::optional<uint64_t>& size) {
  while (!data.empty()) {
    if (data[0] == '\0') break;  // padding some writers leave
    const size_t space = data.find(' ');
    if (space == std::string_view::npos || space == 0) return DataLossError("bad PAX record");
    const std::optional<uint64_t> parsed = ParseUint(data.substr(0, space));
    if (!parsed) return DataLossError("bad PAX length");
    const uint64_t length = *parsed;
    if (length <= space + 1 || length > data.size() || data[length - 1] != '\n') {
      return DataLossError("bad PAX record length");
    }
    const std::string_view record = data.substr(space + 1, length - space - 2);
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos) return DataLossError("PAX record without '='");
    const std::string_view key = record.substr(0, eq);
    const std::string_view value = record.substr(eq + 1);
    if (key == "path") {
      path = std::string(value);
    } else if (key == "size") {
      size = ParseUint(value);
      if (!size) return DataLossError("bad PAX size");
    }
    data.remove_prefix(length);
  }
  return Status::Ok();
}

bool IsRegular(char type) { return type == '0' || type == '\0' || type == '7'; }

}  // namespace

Result<std::vector<TarMember>> ScanTar(std::string_view archive, std::string_view name) {
  std::vector<TarMember> members;
  std::optional<std::string> long_name;  // from a GNU 'L' member, for the next one
  std::optional<std::string> pax_path;   // from a PAX 'x' header, for the next one
  // Not an optional: GCC 12 at -O3 takes its value for uninitialized where it is read.
  uint64_t pax_size = 0;
  bool pax_sized = false;
  uint64_t at = 0;
  auto error = [&](std::string_view what) {
    return DataLossError(fmt::format("{}: tar header at byte {}: {}", name, at, what));
  };
  while (at + kTarBlock <= archive.size()) {
    const std::string_view header = archive.substr(at, kTarBlock);
    if (AllZero(header)) break;  // end of archive
    if (!ChecksumMatches(header)) return error("checksum does not match (not a tar, or corrupt)");
    const char type = header[kType];
    auto header_size = Number(header.substr(kSize, kSizeLen));
    if (!header_size) return error("malformed size field");
    const uint64_t size = pax_sized && type != 'x' && type != 'g' && type != 'L' && type != 'K'
                              ? pax_size
                              : *header_size;
    const uint64_t data = at + kTarBlock;
    if (size > archive.size() - data) {
      return error(
          fmt::format("member of {} bytes runs past the end ({} bytes)", size, archive.size()));
    }
    const std::string_view body = archive.substr(data, size);
    const uint64_t next = data + (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    switch (type) {
      case 'L':  // GNU long name of the next member
        long_name = std::string(body.substr(0, std::min(body.find('\0'), body.size())));
        break;
      case 'K':  // GNU long link name: links are skipped
        break;
      case 'x':
      case 'g': {
        // A global header's records ('g') name no member: only checked.
        std::optional<std::string> path_record;
        std::optional<uint64_t> size_record;
        if (Status s = ParsePax(body, path_record, size_record); !s.ok()) {
          return error(s.message());
        }
        if (type == 'x') {
          pax_path = std::move(path_record);
          pax_sized = size_record.has_value();
          pax_size = size_record.value_or(0);
        }
        break;
      }
      default: {
        std::string member_name;
        if (pax_path) {
          member_name = *pax_path;
        } else if (long_name) {
          member_name = *long_name;
        } else {
          member_name = std::string(Field(header, kName, kNameLen));
          // ustar (not old GNU, whose magic is "ustar  " and uses the field otherwise) joins
          // the prefix.
          if (header.substr(kMagic, 6) == std::string_view("ustar\0", 6)) {
            const std::string_view prefix = Field(header, kPrefix, kPrefixLen);
            if (!prefix.empty()) member_name = std::string(prefix) + "/" + member_name;
          }
        }
        if (type == 'S') {
          // Its data is a sparse map, not the file: reading it as bytes would be wrong.
          return error(fmt::format("{}: sparse members are not supported", member_name));
        }
        if (IsRegular(type)) members.push_back({std::move(member_name), data, size});
        long_name.reset();
        pax_path.reset();
        pax_sized = false;
        break;
      }
    }
    at = next;
  }
  return members;
}

}  // namespace ferry::internal_format
