#include "files/file_encoding.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "files/file_listing.h"

namespace ferry::internal_files {
namespace {

enum Kind : size_t { kJpegKind = 0, kPngKind = 1, kOtherKind = 2 };

Kind KindOf(std::string_view name) {
  static const std::vector<std::string> kJpegNames = {".jpeg", ".jpg"};
  static const std::vector<std::string> kPngNames = {".png"};
  if (HasExtension(name, kJpegNames)) return kJpegKind;
  if (HasExtension(name, kPngNames)) return kPngKind;
  return kOtherKind;
}

std::string_view KindNames(std::string_view encoding) {
  return encoding == "jpeg" ? ".jpg/.jpeg" : ".png";
}

}  // namespace

Result<FileEncoding> ParseFileEncoding(std::string_view text, std::string_view option) {
  for (FileEncoding e :
       {FileEncoding::kAuto, FileEncoding::kJpeg, FileEncoding::kPng, FileEncoding::kBytes}) {
    if (text == FileEncodingName(e)) return e;
  }
  return InvalidArgumentError(
      fmt::format("{} must be auto, jpeg, png or bytes, not '{}'", option, text));
}

std::string_view FileEncodingName(FileEncoding encoding) {
  switch (encoding) {
    case FileEncoding::kAuto:
      return "auto";
    case FileEncoding::kJpeg:
      return "jpeg";
    case FileEncoding::kPng:
      return "png";
    case FileEncoding::kBytes:
      return "bytes";
  }
  return "auto";
}

EncodingDecision DecideFileEncoding(FileEncoding asked, size_t count, const FileNameAt& name_of) {
  std::vector<Kind> kinds(count);
  std::array<size_t, 3> counts{};
  for (size_t i = 0; i < count; ++i) ++counts[kinds[i] = KindOf(name_of(i))];
  EncodingDecision d;
  if (asked != FileEncoding::kAuto) {
    d.encoding = FileEncodingName(asked);
    d.reason = fmt::format("{} was asked for", d.encoding);
  } else {
    // Strictly more than each other kind: a tie is no majority, and bytes holds both sides.
    const auto most = [&](Kind k) {
      for (size_t j = 0; j < counts.size(); ++j) {
        if (j != k && counts[j] >= counts[k]) return false;
      }
      return counts[k] > 0;
    };
    if (most(kJpegKind) || most(kPngKind)) {
      const Kind k = most(kJpegKind) ? kJpegKind : kPngKind;
      d.encoding = k == kJpegKind ? "jpeg" : "png";
      d.reason =
          counts[k] == count
              ? fmt::format("all {} files are named {}", count, KindNames(d.encoding))
              : fmt::format("{} of {} files are named {}", counts[k], count, KindNames(d.encoding));
    } else {
      d.encoding = "bytes";
      d.reason = counts[kJpegKind] + counts[kPngKind] == 0
                     ? std::string("no file is named .jpg/.jpeg or .png")
                     : fmt::format(
                           "no image kind has most of the {} files ({} .jpg/.jpeg, {} .png, {} "
                           "other)",
                           count, counts[kJpegKind], counts[kPngKind], counts[kOtherKind]);
    }
  }
  if (d.encoding != "bytes") {
    const Kind k = d.encoding == "jpeg" ? kJpegKind : kPngKind;
    for (size_t i = 0; i < count; ++i) {
      if (kinds[i] != k) d.others.push_back(i);
    }
  }
  return d;
}

std::string DescribeOthers(const EncodingDecision& decision, const FileNameAt& name_of,
                           size_t limit) {
  std::string out;
  const size_t shown = std::min(limit, decision.others.size());
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    out += name_of(decision.others[i]);
  }
  if (decision.others.size() > shown) {
    out += fmt::format(" and {} more", decision.others.size() - shown);
  }
  return out;
}

Status OtherFilesError(const EncodingDecision& decision, size_t count, const FileNameAt& name_of,
                       std::string_view root, std::string_view ways_out) {
  if (decision.others.empty()) return Status::Ok();
  return InvalidArgumentError(fmt::format(
      "{}: {} of {} files {} not named like the {} files the data column holds ({}; {}): {}; {}",
      root, decision.others.size(), count, decision.others.size() == 1 ? "is" : "are",
      decision.encoding, KindNames(decision.encoding), decision.reason,
      DescribeOthers(decision, name_of), ways_out));
}

bool StartsLike(std::string_view encoding, std::string_view data) {
  if (encoding == "jpeg") return data.starts_with("\xFF\xD8\xFF");
  if (encoding == "png") return data.starts_with(std::string_view("\x89PNG\r\n\x1A\n", 8));
  return true;
}

}  // namespace ferry::internal_files
