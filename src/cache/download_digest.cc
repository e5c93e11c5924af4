#include "cache/download_digest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>

#include "base/crc.h"
#include "base/file_util.h"
#include "base/hex.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;

// How far the part at the follower's cursor must land before it is woken; and what is read
// back at a time.
constexpr uint64_t kDigestStep = uint64_t{1} << 20;

// XXH3-64 and, optionally, a store's checksum over bytes given in order.
class Hasher {
 public:
  explicit Hasher(ChecksumKind checksum) : checksum_(checksum), xxh3_(XXH3_createState()) {
    XXH3_64bits_reset(xxh3_.get());
    if (checksum_ == ChecksumKind::kMd5) {
      md5_.reset(EVP_MD_CTX_new());
      // MD5 is always there in OpenSSL's default provider; without it no MD5 is reported, and
      // the store's checksum is not checked.
      if (!md5_ || EVP_DigestInit_ex(md5_.get(), EVP_md5(), nullptr) != 1) {
        md5_.reset();
        checksum_ = ChecksumKind::kNone;
      }
    }
  }

  void Update(std::string_view data) {
    XXH3_64bits_update(xxh3_.get(), data.data(), data.size());
    switch (checksum_) {
      case ChecksumKind::kMd5:
        EVP_DigestUpdate(md5_.get(), data.data(), data.size());
        break;
      case ChecksumKind::kCrc32:
        crc_ = Crc32(static_cast<uint32_t>(crc_), data);
        break;
      case ChecksumKind::kCrc32c:
        crc_ = Crc32c(static_cast<uint32_t>(crc_), data);
        break;
      case ChecksumKind::kCrc64Nvme:
        crc_ = Crc64Nvme(crc_, data);
        break;
      case ChecksumKind::kNone:
        break;
    }
    bytes_ += data.size();
  }

  FileDigests Final() {
    FileDigests out{.bytes = bytes_, .xxh3 = XXH3_64bits_digest(xxh3_.get())};
    switch (checksum_) {
      case ChecksumKind::kMd5: {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        if (EVP_DigestFinal_ex(md5_.get(), digest, &length) == 1) {
          out.checksum = ToHex(std::string_view(reinterpret_cast<const char*>(digest), length));
        }
        break;
      }
      case ChecksumKind::kCrc32:
      case ChecksumKind::kCrc32c:
        out.checksum = fmt::format("{:08x}", crc_);
        break;
      case ChecksumKind::kCrc64Nvme:
        out.checksum = fmt::format("{:016x}", crc_);
        break;
      case ChecksumKind::kNone:
        break;
    }
    if (!out.checksum.empty()) out.checksum_kind = checksum_;
    return out;
  }

 private:
  struct FreeXxh3 {
    void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
  };
  struct FreeMd {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  ChecksumKind checksum_;
  std::unique_ptr<XXH3_state_t, FreeXxh3> xxh3_;
  std::unique_ptr<EVP_MD_CTX, FreeMd> md5_;
  uint64_t crc_ = 0;
  uint64_t bytes_ = 0;
};

// A buffer for reading back up to `bytes` in kDigestStep pieces, not zero-filled.
std::unique_ptr<char[]> ReadBuffer(uint64_t bytes, size_t* size) {
  *size = static_cast<size_t>(std::clamp<uint64_t>(bytes, 1, kDigestStep));
  return std::make_unique_for_overwrite<char[]>(*size);
}

// Hashes [begin, end) of `fd` into `hasher`: kDataLoss when the file ends first, unless
// `to_eof` (then the end of the file is the end).
Status HashRange(int fd, uint64_t begin, uint64_t end, bool to_eof, char* buffer,
                 size_t buffer_size, Hasher& hasher, const fs::path& path) {
  for (uint64_t position = begin; position < end;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer_size, end - position));
    const ssize_t n = ::pread(fd, buffer, want, static_cast<off_t>(position));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read back", path);
    if (n == 0) {
      if (to_eof) return Status::Ok();
      return DataLossError(
          fmt::format("{}: ends at byte {}, before the {} bytes the download "
                      "wrote",
                      path.string(), position, end));
    }
    hasher.Update(std::string_view(buffer, static_cast<size_t>(n)));
    position += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

}  // namespace

FileDigests DigestOf(std::string_view data, ChecksumKind checksum) {
  Hasher hasher(checksum);
  hasher.Update(data);
  return hasher.Final();
}

Result<FileDigests> DigestFile(const fs::path& path, ChecksumKind checksum) {
  // Read, not mapped: a block the disk cannot read is an error to report, not a SIGBUS.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  struct stat st {};
  Status status = ::fstat(fd, &st) == 0 ? Status::Ok() : ErrnoToStatus(errno, "stat", path);
  Hasher hasher(checksum);
  if (status.ok()) {
    size_t size = 0;
    const auto buffer = ReadBuffer(static_cast<uint64_t>(st.st_size), &size);
    status = HashRange(fd, 0, ~uint64_t{0}, /*to_eof=*/true, buffer.get(), size, hasher, path);
  }
  ::close(fd);
  FERRY_RETURN_IF_ERROR(status);
  return hasher.Final();
}

Result<std::unique_ptr<DownloadDigest>> DownloadDigest::Start(const fs::path& path,
                                                              std::vector<DownloadPart> parts,
                                                              ChecksumKind checksum) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  try {
    return std::unique_ptr<DownloadDigest>(
        new DownloadDigest(path, fd, std::move(parts), checksum));
  } catch (const std::system_error& e) {  // no thread to be had
    ::close(fd);
    return ResourceExhaustedError(
        fmt::format("{}: cannot start the thread that digests it: {}", path.string(), e.what()));
  }
}

DownloadDigest::DownloadDigest(const fs::path& path, int fd, std::vector<DownloadPart> parts,
                               ChecksumKind checksum)
    : path_(path), fd_(fd), checksum_(checksum), parts_(parts.size()) {
  for (size_t i = 0; i < parts.size(); ++i) {
    parts_[i].range = parts[i];
    parts_[i].landed.store(parts[i].begin, std::memory_order_relaxed);
  }
  follower_ = std::jthread([this](std::stop_token stop) { Follow(stop); });
}

DownloadDigest::~DownloadDigest() {
  if (follower_.joinable()) {
    follower_.request_stop();
    follower_.join();
  }
  ::close(fd_);
}

void DownloadDigest::Landed(uint32_t part, uint64_t end) {
  if (part >= parts_.size()) return;
  parts_[part].landed.store(end);
  // Sequentially consistent with WaitFor's stores: either the follower sees this mark before it
  // sleeps, or this sees the mark it sleeps for and wakes it.
  if (waiting_part_.load() == part && end >= waiting_for_.load()) {
    { std::lock_guard lock(mu_); }
    landed_cv_.notify_one();
  }
}

uint64_t DownloadDigest::WaitFor(size_t p, uint64_t want, std::stop_token stop) {
  Part& part = parts_[p];
  if (part.landed.load() >= want) return part.landed.load();
  waiting_part_.store(p);
  waiting_for_.store(want);
  {
    std::unique_lock lock(mu_);
    landed_cv_.wait(lock, stop, [&] { return part.landed.load() >= want; });
  }
  waiting_for_.store(~uint64_t{0});
  return part.landed.load();
}

void DownloadDigest::Follow(std::stop_token stop) {
  Hasher hasher(checksum_);
  size_t size = 0;
  const auto buffer = ReadBuffer(parts_.empty() ? 0 : parts_.back().range.end, &size);
  for (size_t p = 0; p < parts_.size(); ++p) {
    const DownloadPart range = parts_[p].range;
    for (uint64_t position = range.begin; position < range.end;) {
      const uint64_t landed = WaitFor(p, std::min(position + kDigestStep, range.end), stop);
      if (stop.stop_requested()) {
        result_ = CancelledError(fmt::format("{}: digest stopped", path_.string()));
        return;
      }
      result_ =
          HashRange(fd_, position, landed, /*to_eof=*/false, buffer.get(), size, hasher, path_);
      if (!result_.ok()) return;
      position = landed;
    }
  }
  digests_ = hasher.Final();
}

Result<FileDigests> DownloadDigest::Finish(ChecksumKind want) {
  follower_.join();
  FERRY_RETURN_IF_ERROR(result_);
  if (want != ChecksumKind::kNone && digests_.checksum_kind != want) {
    FERRY_ASSIGN_OR_RETURN(const FileDigests again, DigestFile(path_, want));
    digests_.checksum_kind = again.checksum_kind;
    digests_.checksum = again.checksum;
  }
  return digests_;
}

}  // namespace ferry::internal_cache
