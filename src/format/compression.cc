#include "format/compression.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <bzlib.h>
#include <fmt/format.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <charconv>
#include <memory>

namespace ferry {
namespace {

struct FamilyInfo {
  std::string_view name;
  CompressionFamily family;
  int min_level, max_level, default_level;  // min > max: takes no level
};

constexpr FamilyInfo kFamilies[] = {
    {"br", CompressionFamily::kBrotli, 0, 11, 11}, {"bz2", CompressionFamily::kBzip2, 1, 9, 9},
    {"gz", CompressionFamily::kGzip, 0, 9, 9},     {"snappy", CompressionFamily::kSnappy, 1, 0, 0},
    {"zstd", CompressionFamily::kZstd, 1, 22, 3},
};

const FamilyInfo& InfoOf(CompressionFamily family) {
  for (const auto& f : kFamilies) {
    if (f.family == family) return f;
  }
  return kFamilies[0];
}

Status TooLarge(std::string_view what, uint64_t max_size) {
  return DataLossError(
      fmt::format("{} data expands past {} bytes, the size the index allows", what, max_size));
}

// Output chunks for the streaming decoders: grow as needed, never past max_size.
constexpr size_t kChunk = 1 << 20;

// How much to grow the output by: one chunk, or one byte past the limit so that an overlong
// stream is detected rather than silently cut.
size_t NextChunk(size_t produced, uint64_t max_size) {
  const uint64_t remaining = max_size >= produced ? max_size - produced : 0;
  return remaining >= kChunk ? kChunk : static_cast<size_t>(remaining) + 1;
}

Result<std::string> InflateGzip(std::string_view in, uint64_t max_size) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return InternalError("zlib inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  for (;;) {
    if (rc == Z_STREAM_END) {
      // Python writes one member, but gzip allows several; continue with the next one.
      if (zs.avail_in == 0) break;
      if (inflateReset(&zs) != Z_OK) return DataLossError("gzip: cannot start the next member");
    }
    const size_t before = out.size();
    const size_t grow = NextChunk(before, max_size);
    out.resize(before + grow);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    zs.avail_out = static_cast<uInt>(grow);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(before + grow - zs.avail_out);
    if (out.size() > max_size) return TooLarge("gzip", max_size);
    if (rc == Z_STREAM_END) continue;
    if (rc != Z_OK) {
      return DataLossError(fmt::format("gzip data is corrupt: {}", zs.msg ? zs.msg : "truncated"));
    }
    if (zs.avail_in == 0 && zs.avail_out != 0) return DataLossError("gzip data is truncated");
  }
  return out;
}

Result<std::string> DecompressZstd(std::string_view in, uint64_t max_size) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return ResourceExhaustedError("cannot allocate a zstd decoder");
  std::string out;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  // A frame that states its content size lets us allocate once.
  const unsigned long long content = ZSTD_getFrameContentSize(in.data(), in.size());
  if (content != ZSTD_CONTENTSIZE_ERROR && content != ZSTD_CONTENTSIZE_UNKNOWN) {
    if (content > max_size) return TooLarge("zstd", max_size);
    out.reserve(content);
  }
  size_t rc = 1;
  while (input.pos < input.size || rc != 0) {
    const size_t before = out.size();
    const size_t grow = NextChunk(before, max_size);
    out.resize(before + grow);
    ZSTD_outBuffer output{out.data() + before, grow, 0};
    rc = ZSTD_decompressStream(ctx.get(), &output, &input);
    out.resize(before + output.pos);
    if (ZSTD_isError(rc)) {
      return DataLossError(fmt::format("zstd data is corrupt: {}", ZSTD_getErrorName(rc)));
    }
    if (out.size() > max_size) return TooLarge("zstd", max_size);
    if (input.pos == input.size && rc != 0 && output.pos < grow) {
      return DataLossError("zstd data is truncated");
    }
  }
  return out;
}

Result<std::string> DecompressBrotli(std::string_view in, uint64_t max_size) {
  std::unique_ptr<BrotliDecoderState, void (*)(BrotliDecoderState*)> state(
      BrotliDecoderCreateInstance(nullptr, nullptr, nullptr), BrotliDecoderDestroyInstance);
  if (!state) return ResourceExhaustedError("cannot allocate a brotli decoder");
  std::string out;
  size_t avail_in = in.size();
  const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
  for (;;) {
    const size_t before = out.size();
    const size_t grow = NextChunk(before, max_size);
    out.resize(before + grow);
    size_t avail_out = grow;
    uint8_t* next_out = reinterpret_cast<uint8_t*>(out.data() + before);
    const BrotliDecoderResult r = BrotliDecoderDecompressStream(state.get(), &avail_in, &next_in,
                                                                &avail_out, &next_out, nullptr);
    out.resize(before + grow - avail_out);
    if (out.size() > max_size) return TooLarge("brotli", max_size);
    if (r == BROTLI_DECODER_RESULT_SUCCESS) {
      if (avail_in != 0) return DataLossError("brotli stream is followed by extra bytes");
      return out;
    }
    if (r == BROTLI_DECODER_RESULT_ERROR) {
      return DataLossError(
          fmt::format("brotli data is corrupt: {}",
                      BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state.get()))));
    }
    if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
      return DataLossError("brotli data is truncated");
  }
}

Result<std::string> DecompressBzip2(std::string_view in, uint64_t max_size) {
  bz_stream bz{};
  if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) return InternalError("bzip2 init failed");
  std::unique_ptr<bz_stream, int (*)(bz_stream*)> guard(&bz, BZ2_bzDecompressEnd);
  std::string out;
  bz.next_in = const_cast<char*>(in.data());
  bz.avail_in = static_cast<unsigned>(in.size());
  for (;;) {
    const size_t before = out.size();
    const size_t grow = NextChunk(before, max_size);
    out.resize(before + grow);
    bz.next_out = out.data() + before;
    bz.avail_out = static_cast<unsigned>(grow);
    const int rc = BZ2_bzDecompress(&bz);
    out.resize(before + grow - bz.avail_out);
    if (out.size() > max_size) return TooLarge("bzip2", max_size);
    if (rc == BZ_STREAM_END) {
      if (bz.avail_in != 0) return DataLossError("bzip2 stream is followed by extra bytes");
      return out;
    }
    if (rc != BZ_OK) return DataLossError(fmt::format("bzip2 data is corrupt (code {})", rc));
    if (bz.avail_in == 0 && bz.avail_out != 0) return DataLossError("bzip2 data is truncated");
  }
}

}  // namespace

Result<Compression> Compression::Parse(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  for (const auto& f : kFamilies) {
    if (f.name != name) continue;
    Compression c;
    c.family_ = f.family;
    c.spec_ = std::string(spec);
    c.level_ = f.default_level;
    if (colon != std::string_view::npos) {
      const std::string_view level = spec.substr(colon + 1);
      int v = 0;
      const auto res = std::from_chars(level.data(), level.data() + level.size(), v);
      // The reference accepts only the canonical spellings ("zstd:3", never "zstd:03"), and
      // index.json stores the spec verbatim, so anything else would be unreadable there.
      if (f.min_level > f.max_level || level.empty() || res.ec != std::errc() ||
          res.ptr != level.data() + level.size() || v < f.min_level || v > f.max_level ||
          (level.size() > 1 && level[0] == '0')) {
        return InvalidArgumentError(
            f.min_level > f.max_level
                ? fmt::format("compression '{}': {} takes no level", spec, f.name)
                : fmt::format("compression '{}': level must be {}..{}", spec, f.min_level,
                              f.max_level));
      }
      c.level_ = v;
    }
    return c;
  }
  return InvalidArgumentError(fmt::format(
      "unknown compression '{}' (known: br[:0-11], bz2[:1-9], gz[:0-9], snappy, zstd[:1-22])",
      spec));
}

std::string_view Compression::extension() const { return InfoOf(family_).name; }

Result<std::string> Compression::Compress(std::string_view raw) const {
  std::string out;
  FERRY_RETURN_IF_ERROR(CompressInto(raw, out));
  return out;
}

Status Compression::CompressInto(std::string_view raw, std::string& out) const {
  switch (family_) {
    case CompressionFamily::kZstd: {
      // One frame with Frame_Content_Size: the one-shot API always records it.
      out.resize(ZSTD_compressBound(raw.size()));
      const size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), level_);
      if (ZSTD_isError(n)) return InternalError(fmt::format("zstd: {}", ZSTD_getErrorName(n)));
      out.resize(n);
      return Status::Ok();
    }
    case CompressionFamily::kGzip: {
      z_stream zs{};
      if (deflateInit2(&zs, level_, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
        return InternalError("zlib deflateInit2 failed");
      }
      std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, deflateEnd);
      // Python's header: no name, OS 255. MTIME stays 0 so that output is reproducible.
      gz_header header{};
      header.os = 255;
      deflateSetHeader(&zs, &header);
      out.resize(deflateBound(&zs, raw.size()) + 32);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
      zs.avail_in = static_cast<uInt>(raw.size());
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(out.size());
      if (deflate(&zs, Z_FINISH) != Z_STREAM_END) return InternalError("zlib deflate failed");
      out.resize(zs.total_out);
      return Status::Ok();
    }
    case CompressionFamily::kBrotli: {
      size_t n = BrotliEncoderMaxCompressedSize(raw.size());
      out.resize(n == 0 ? raw.size() + 1024 : n);
      n = out.size();
      if (!BrotliEncoderCompress(level_, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, raw.size(),
                                 reinterpret_cast<const uint8_t*>(raw.data()), &n,
                                 reinterpret_cast<uint8_t*>(out.data()))) {
        return InternalError("brotli compression failed");
      }
      out.resize(n);
      return Status::Ok();
    }
    case CompressionFamily::kBzip2: {
      unsigned n = static_cast<unsigned>(raw.size() + raw.size() / 100 + 600);
      out.resize(n);
      const int rc = BZ2_bzBuffToBuffCompress(out.data(), &n, const_cast<char*>(raw.data()),
                                              static_cast<unsigned>(raw.size()), level_, 0, 0);
      if (rc != BZ_OK) return InternalError(fmt::format("bzip2 compression failed ({})", rc));
      out.resize(n);
      return Status::Ok();
    }
    case CompressionFamily::kSnappy:
      out.clear();
      snappy::Compress(raw.data(), raw.size(), &out);
      return Status::Ok();
  }
  return InternalError("unhandled compression family");
}

Result<std::string> Compression::Decompress(std::string_view compressed, uint64_t max_size) const {
  switch (family_) {
    case CompressionFamily::kZstd:
      return DecompressZstd(compressed, max_size);
    case CompressionFamily::kGzip:
      return InflateGzip(compressed, max_size);
    case CompressionFamily::kBrotli:
      return DecompressBrotli(compressed, max_size);
    case CompressionFamily::kBzip2:
      return DecompressBzip2(compressed, max_size);
    case CompressionFamily::kSnappy: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(compressed.data(), compressed.size(), &n)) {
        return DataLossError("snappy data is corrupt: no valid length header");
      }
      if (n > max_size) return TooLarge("snappy", max_size);
      std::string out;
      if (!snappy::Uncompress(compressed.data(), compressed.size(), &out)) {
        return DataLossError("snappy data is corrupt");
      }
      return out;
    }
  }
  return InternalError("unhandled compression family");
}

}  // namespace ferry
