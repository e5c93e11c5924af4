#include "cache/digest_record.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "base/file_util.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRecordMagic = "ferry-digest 1 ";
// A record is one short line; anything longer is not one.
constexpr size_t kMaxRecordBytes = 512;

fs::path RecordTemporary(const fs::path& path) { return fs::path(path.string() + ".tmp"); }

// The next space-separated word of `text`, consumed.
std::string_view NextRecordWord(std::string_view& text) {
  const size_t space = text.find(' ');
  const std::string_view word = text.substr(0, space);
  text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
  return word;
}

template <typename T>
std::optional<T> ParseRecordNumber(std::string_view word, int base) {
  T value{};
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value, base);
  if (error != std::errc() || end != word.data() + word.size() || word.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string FormatDigestRecord(const DigestRecord& record) {
  std::string line = fmt::format("{}{} xxh3 {:016x}", kRecordMagic, record.bytes, record.xxh3);
  if (!record.verified_boot.empty()) line += fmt::format(" verified {}", record.verified_boot);
  return line + "\n";
}

std::optional<DigestRecord> ParseDigestRecord(std::string_view text) {
  if (!text.starts_with(kRecordMagic) || !text.ends_with('\n')) return std::nullopt;
  text.remove_prefix(kRecordMagic.size());
  text.remove_suffix(1);
  DigestRecord record;
  const auto bytes = ParseRecordNumber<uint64_t>(NextRecordWord(text), 10);
  if (!bytes || NextRecordWord(text) != "xxh3") return std::nullopt;
  const std::string_view hex = NextRecordWord(text);
  const auto xxh3 = hex.size() == 16 ? ParseRecordNumber<uint64_t>(hex, 16) : std::nullopt;
  if (!xxh3) return std::nullopt;
  record.bytes = *bytes;
  record.xxh3 = *xxh3;
  if (!text.empty()) {
    if (NextRecordWord(text) != "verified") return std::nullopt;
    record.verified_boot = std::string(NextRecordWord(text));
    if (record.verified_boot.empty() || !text.empty()) return std::nullopt;
  }
  return record;
}

Status WriteDigestRecord(const fs::path& path, const DigestRecord& record, unsigned mode) {
  const fs::path tmp = RecordTemporary(path);
  const std::string line = FormatDigestRecord(record);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoToStatus(errno, "create", tmp);
  const ssize_t n = ::write(fd, line.data(), line.size());
  Status status = n == static_cast<ssize_t>(line.size())
                      ? Status::Ok()
                      : (n < 0 ? ErrnoToStatus(errno, "write", tmp)
                               : ResourceExhaustedError(fmt::format(
                                     "{}: short write of a digest record", tmp.string())));
  if (::close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, "close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoToStatus(errno, "rename", path);
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

Result<std::optional<DigestRecord>> ReadDigestRecord(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<DigestRecord>();
    return ErrnoToStatus(errno, "open", path);
  }
  char buffer[kMaxRecordBytes + 1];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof(buffer));
  } while (n < 0 && errno == EINTR);
  const int read_errno = errno;
  ::close(fd);
  if (n < 0) return ErrnoToStatus(read_errno, "read", path);
  auto record = ParseDigestRecord(std::string_view(buffer, static_cast<size_t>(n)));
  if (!record) {
    return DataLossError(fmt::format("{}: not a digest record ({} bytes)", path.string(), n));
  }
  return std::optional<DigestRecord>(std::move(*record));
}

void RemoveDigestRecord(const fs::path& path) {
  ::unlink(path.c_str());
  ::unlink(RecordTemporary(path).c_str());
}

}  // namespace ferry::internal_cache
