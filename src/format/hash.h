// Shard file hashes (spec §8): the hashlib family through OpenSSL and the xxHash family through
// libxxhash (seed 0), each as the lowercase hex digest the reference writes. xxHash digests are
// in canonical big-endian form, which equals the integer zero-padded to its width.
//
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry {

/// True for md5, sha1, sha224, sha256, sha384, sha512, sha3_224/256/384/512, blake2b, blake2s,
/// xxh32, xxh64, xxh3_64, xxh128, xxh3_128.
bool IsKnownHash(std::string_view algorithm);

/// Every name known, and the list in sorted order (the reference writer requires it).
Status ValidateHashNames(const std::vector<std::string>& algorithms);

/// The lowercase hex digest of `data`. kInvalidArgument for an unknown algorithm.
Result<std::string> HashHex(std::string_view algorithm, std::string_view data);

}  // namespace ferry
