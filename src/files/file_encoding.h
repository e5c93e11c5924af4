// FileEncoding: the MDS encoding of a column that holds whole files - `jpeg`, `png` or `bytes` -
// decided once from the names of ALL the files, for `ferry convert` and FileDataset alike.
//
// With kAuto each file counts for its kind by name (.jpg/.jpeg: jpeg, .png: png, anything else:
// other, case-insensitive). The column takes an image kind when that kind has more files than
// each of the two other kinds; otherwise it is `bytes`, which holds any file. A forced choice
// (kJpeg, kPng, kBytes) is taken as given. Either way the files whose kind differs from the
// column's are the decision's `others`: a caller reports them (an error naming them, or skips
// them when asked), so one stray notes.txt never silently turns a jpeg column into bytes. A
// bytes column has no others.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/files/file_dataset.h"
#include "ferry/result.h"

namespace ferry::internal_files {

/// "auto", "jpeg", "png" or "bytes"; kInvalidArgument naming `option` otherwise.
Result<FileEncoding> ParseFileEncoding(std::string_view text, std::string_view option);
std::string_view FileEncodingName(FileEncoding encoding);

struct EncodingDecision {
  std::string encoding;        // "jpeg", "png" or "bytes"
  std::string reason;          // why, for a summary: "2999 of 3000 files are named .jpg/.jpeg"
  std::vector<size_t> others;  // ascending indexes of the files not of the column's kind
};

/// The name of file `i` of `count` (a path relative to the root).
using FileNameAt = std::function<std::string_view(size_t)>;

EncodingDecision DecideFileEncoding(FileEncoding asked, size_t count, const FileNameAt& name_of);

/// "a/x.txt, b/y.gif and 3 more": the first `limit` of the decision's others.
std::string DescribeOthers(const EncodingDecision& decision, const FileNameAt& name_of,
                           size_t limit = 5);

/// kInvalidArgument for a decision with others: "<root>: 2 of 3000 files are not named like
/// the jpeg files the column holds (.jpg/.jpeg): a/notes.txt, ...; <ways_out>". `ways_out`
/// says how the caller's user leaves them out or stores every file as bytes.
Status OtherFilesError(const EncodingDecision& decision, size_t count, const FileNameAt& name_of,
                       std::string_view root, std::string_view ways_out);

/// Removes the items at `ascending` indexes from `items`, keeping the order of the rest: the
/// files a decision left out.
template <typename T>
void RemoveAt(std::vector<T>& items, const std::vector<size_t>& ascending) {
  size_t next = 0, out = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (next < ascending.size() && ascending[next] == i) {
      ++next;
    } else {
      if (out != i) items[out] = std::move(items[i]);
      ++out;
    }
  }
  items.resize(out);
}

/// True when `data` starts as a file of `encoding` does (JPEG's FF D8 FF, PNG's signature);
/// always true for bytes.
bool StartsLike(std::string_view encoding, std::string_view data);

}  // namespace ferry::internal_files
