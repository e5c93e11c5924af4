// WebDataset's ways of naming shards instead of a folder: a brace pattern,
// "s3://bucket/laion/train-{000000..000127}.tar", expanded as the braceexpand package that
// WebDataset uses expands it, and several patterns or URLs joined by "::" (WebDataset's
// expand_urls). ferry streams such a selection from one folder: the shards are the named objects
// of that folder (src/cache/tar_shard_list.h counts them); the folder's index.json, if any, is
// not read.
//
// Braces: "{a,b,c}" alternatives (nested braces and empty alternatives allowed), "{3..7}" and
// "{7..3}" integer ranges, with an optional step "{0..10..5}"; a bound written with a leading
// zero pads every number to the wider bound ("{08..10}" is 08 09 10); "{a..e}" letter ranges
// (A-Z then a-z). A backslash escapes the next character; braces that form none of these ("{1}",
// "{}") are kept as they are, and unbalanced ones are an error, as braceexpand 0.1.7 does.
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry::internal_format {

/// The most names a pattern may expand to: a typo such as {0..99999999} is an error, not an
/// allocation of gigabytes.
inline constexpr size_t kMaxPatternNames = 1'000'000;

/// The expansion of `pattern`'s braces, in order (see the file comment). kInvalidArgument for
/// unbalanced braces or more than kMaxPatternNames names.
Result<std::vector<std::string>> ExpandBraces(std::string_view pattern);

/// True when `url` names shards by a pattern or a "::" list rather than naming a folder: it has
/// an unescaped "{" in its last path component, or "::" outside an IPv6 host's brackets.
bool IsShardPattern(std::string_view url);

struct ShardSelection {
  std::string folder;               // the URL of the folder, ending in '/'
  std::vector<std::string> shards;  // names in that folder, in order, without repeats
};

/// The folder and shard names `url` selects: each "::" part brace-expanded, every name in one
/// folder (braces in the folder part are refused: ferry reads one folder per stream).
/// kInvalidArgument, naming `url`, for names in several folders, a name with a "/" in it, or
/// none at all.
Result<ShardSelection> ParseShardPattern(std::string_view url);

}  // namespace ferry::internal_format
