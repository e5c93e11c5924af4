// What a download's digests cost per byte, one core (Google Benchmark): XXH3-64 alone (the
// digest record) and with each checksum a store may send for free - MD5 (an S3 ETag, Azure's
// Content-MD5), CRC32, CRC32C and CRC64NVME (S3's x-amz-checksum-*, GCS's x-goog-hash) - over
// 64 MiB in memory, as the follower thread hashes what it reads back from the page cache
// (src/cache/download_digest.h). docs/benchmarks.md, "Integrity checks on epoch 1".
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>

#include "cache/download_digest.h"

namespace ferry::internal_cache {
namespace {

const std::string& Bytes() {
  static const std::string bytes = [] {
    std::mt19937_64 rng(1);
    std::string out(size_t{64} << 20, '\0');
    for (size_t i = 0; i + 8 <= out.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(out.data() + i, &v, 8);
    }
    return out;
  }();
  return bytes;
}

void BM_Digest(benchmark::State& state) {
  const auto kind = static_cast<ChecksumKind>(state.range(0));
  const std::string& bytes = Bytes();
  for (auto _ : state) benchmark::DoNotOptimize(DigestOf(bytes, kind));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.SetLabel(kind == ChecksumKind::kNone ? "XXH3 only"
                                             : "XXH3 + " + std::string(ChecksumName(kind)));
}
BENCHMARK(BM_Digest)
    ->Arg(static_cast<int>(ChecksumKind::kNone))
    ->Arg(static_cast<int>(ChecksumKind::kCrc32c))
    ->Arg(static_cast<int>(ChecksumKind::kCrc64Nvme))
    ->Arg(static_cast<int>(ChecksumKind::kCrc32))
    ->Arg(static_cast<int>(ChecksumKind::kMd5))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry::internal_cache

BENCHMARK_MAIN();
