#include "format/tar_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "format/tar_scan.h"

namespace ferry::internal_format {
namespace {

constexpr uint64_t kRecord = 20 * kTarBlock;
constexpr uint64_t kMaxOctalSize = (uint64_t{1} << 33) - 1;  // 11 octal digits

uint64_t Padding(uint64_t size) { return (kTarBlock - size % kTarBlock) % kTarBlock; }

// Writes `value` as `width - 1` octal digits and a NUL into `field`.
void PutOctal(char* field, size_t width, uint64_t value) {
  const std::string digits = fmt::format("{:0{}o}", value, width - 1);
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
}

// One ustar header block; `name` and `prefix` fit their fields.
std::string UstarBlock(std::string_view name, std::string_view prefix, uint64_t size, int64_t mtime,
                       char type) {
  std::string block(kTarBlock, '\0');
  char* h = block.data();
  std::memcpy(h, name.data(), name.size());
  PutOctal(h + 100, 8, 0644);  // mode
  PutOctal(h + 108, 8, 0);     // uid
  PutOctal(h + 116, 8, 0);     // gid
  PutOctal(h + 124, 12, size);
  PutOctal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(mtime, 0)));
  h[156] = type;
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);  // magic and version
  std::memcpy(h + 345, prefix.data(), prefix.size());
  // The checksum is over the block with its own field read as spaces.
  std::memset(h + 148, ' ', 8);
  uint32_t sum = 0;
  for (unsigned char c : block) sum += c;
  const std::string digits = fmt::format("{:06o}", sum);
  std::memcpy(h + 148, digits.data(), 6);
  h[154] = '\0';
  h[155] = ' ';
  return block;
}

// A PAX record "<length> path=<name>\n", whose length counts its own digits.
std::string PaxRecord(std::string_view key, std::string_view value) {
  const size_t body = 1 + key.size() + 1 + value.size() + 1;  // " key=value\n"
  size_t length = body + 1;
  while (std::to_string(length).size() + body != length) ++length;
  return fmt::format("{} {}={}\n", length, key, value);
}

}  // namespace

Result<std::string> TarHeader(std::string_view name, uint64_t size, int64_t mtime) {
  if (name.empty() || name.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("tar member name '{}' is empty or holds a NUL byte", name));
  }
  if (size > kMaxOctalSize) {
    return InvalidArgumentError(fmt::format(
        "tar member '{}' holds {} bytes; ferry writes members under 8 GiB", name, size));
  }
  if (name.size() <= 100) return UstarBlock(name, "", size, mtime, '0');
  // ustar holds a name of up to 255 bytes split at a '/' into prefix (155) and name (100).
  for (size_t slash = name.find('/'); slash != std::string_view::npos;
       slash = name.find('/', slash + 1)) {
    if (slash <= 155 && name.size() - slash - 1 <= 100 && slash + 1 < name.size()) {
      return UstarBlock(name.substr(slash + 1), name.substr(0, slash), size, mtime, '0');
    }
  }
  const std::string pax = PaxRecord("path", name);
  std::string out = UstarBlock("././@PaxHeader", "", pax.size(), mtime, 'x');
  out += pax;
  out.append(Padding(pax.size()), '\0');
  // The ustar name, cut, is what a reader without PAX sees.
  out += UstarBlock(name.substr(0, 100), "", size, mtime, '0');
  return out;
}

Result<TarWriter> TarWriter::Create(const std::filesystem::path& path) {
  FERRY_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  return TarWriter(std::move(file));
}

Status TarWriter::Add(std::string_view name, std::string_view data) {
  FERRY_ASSIGN_OR_RETURN(const std::string header, TarHeader(name, data.size()));
  FERRY_RETURN_IF_ERROR(file_->Write(header));
  FERRY_RETURN_IF_ERROR(file_->Write(data));
  FERRY_RETURN_IF_ERROR(file_->Write(std::string(Padding(data.size()), '\0')));
  bytes_ += header.size() + data.size() + Padding(data.size());
  return Status::Ok();
}

Result<uint64_t> TarWriter::Finish() {
  uint64_t end = bytes_ + 2 * kTarBlock;
  end += (kRecord - end % kRecord) % kRecord;
  FERRY_RETURN_IF_ERROR(file_->Write(std::string(end - bytes_, '\0')));
  FERRY_RETURN_IF_ERROR(file_->Commit());
  file_.reset();
  return end;
}

}  // namespace ferry::internal_format
