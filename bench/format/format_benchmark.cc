// Inner loops of the MDS format layer (Google Benchmark):
//   - per-sample read overhead over a hot (in-memory) shard for 100-byte and 100 KB samples:
//     MdsShardReader::ReadFields hands out views, so it should cost tens of nanoseconds whatever
//     the sample size; BM_ReadSample is the same read through the format seam (ShardReader, the
//     stream layer's path); BM_CopySample is the copy a caller may add on top, measured beside it;
//   - MdsWriter throughput (MB/s of raw shard data) without compression and with zstd.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "base/temp_dir_testutil.h"
#include "ferry/format/index.h"
#include "ferry/format/mds_shard_reader.h"
#include "ferry/format/mds_writer.h"
#include "ferry/format/shard_format.h"

namespace ferry {
namespace {

// Bytes that compress roughly 2:1 with zstd, like a mix of headers and image data.
std::string MixedBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    s[i] = (i / 64) % 2 == 0 ? static_cast<char>(rng()) : static_cast<char>('a' + i % 7);
  }
  return s;
}

// A shard of `count` samples with columns {data: bytes, label: int}, built with MdsWriter and
// loaded into memory.
struct HotShard {
  testing::TempDir tmp;
  std::unique_ptr<MdsShardReader> reader;
  std::unique_ptr<ShardReader> seam;  // the same shard, opened through its ShardFormat

  HotShard(size_t sample_bytes, size_t count) {
    auto writer = MdsWriter::Create({.out = tmp.path(),
                                     .columns = {{"data", "bytes"}, {"label", "int"}},
                                     .size_limit = std::nullopt})
                      .value();
    const std::string payload = MixedBytes(sample_bytes, 1);
    for (size_t i = 0; i < count; ++i) {
      const Value values[] = {Value(Bytes{payload}), Value(static_cast<int64_t>(i))};
      if (!writer->WriteValues(values).ok()) std::abort();
    }
    DatasetDescription index = writer->Finish().value();
    reader = std::make_unique<MdsShardReader>(
        MdsShardReader::Open(tmp / index.shards[0].raw_data.basename, index.shards[0]).value());
    seam = FindShardFormat("mds")
               .value()
               ->Open(tmp / index.shards[0].raw_data.basename, index.shards[0])
               .value();
  }
};

void BM_ReadFields(benchmark::State& state) {
  const size_t sample_bytes = static_cast<size_t>(state.range(0));
  const size_t count = std::max<size_t>(64, (64u << 20) / (sample_bytes + 16)) / 4;
  HotShard shard(sample_bytes, count);
  std::string_view fields[2];
  uint32_t i = 0;
  const uint32_t n = shard.reader->num_samples();
  for (auto _ : state) {
    if (!shard.reader->ReadFields(i, fields).ok()) state.SkipWithError("bad sample");
    benchmark::DoNotOptimize(fields[0].data());
    benchmark::DoNotOptimize(fields[1].data());
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["sample_bytes"] = static_cast<double>(sample_bytes);
}
BENCHMARK(BM_ReadFields)->Arg(100)->Arg(100 << 10);

void BM_ReadSample(benchmark::State& state) {
  const size_t sample_bytes = static_cast<size_t>(state.range(0));
  const size_t count = std::max<size_t>(64, (64u << 20) / (sample_bytes + 16)) / 4;
  HotShard shard(sample_bytes, count);
  const ShardReader& reader = *shard.seam;
  SampleFields out;
  uint32_t i = 0;
  const uint32_t n = reader.num_samples();
  for (auto _ : state) {
    if (!reader.ReadSample(i, out).ok()) state.SkipWithError("bad sample");
    benchmark::DoNotOptimize(out.fields[0].data());
    benchmark::DoNotOptimize(out.fields[1].data());
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["sample_bytes"] = static_cast<double>(sample_bytes);
}
BENCHMARK(BM_ReadSample)->Arg(100)->Arg(100 << 10);

// The copy a caller asks for when it wants the bytes in its own buffer (the baseline).
void BM_CopySample(benchmark::State& state) {
  const size_t sample_bytes = static_cast<size_t>(state.range(0));
  const std::string src = MixedBytes(sample_bytes, 2);
  std::string dst(sample_bytes, '\0');
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), sample_bytes);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * sample_bytes));
}
BENCHMARK(BM_CopySample)->Arg(100)->Arg(100 << 10);

void BM_Writer(benchmark::State& state, std::optional<std::string> compression) {
  const size_t sample_bytes = 100 << 10;
  const std::string payload = MixedBytes(sample_bytes, 3);
  uint64_t bytes = 0;
  for (auto _ : state) {
    testing::TempDir tmp;
    auto writer = MdsWriter::Create({.out = tmp.path(),
                                     .columns = {{"data", "bytes"}, {"label", "int"}},
                                     .compression = compression,
                                     .hashes = {"xxh64"}})
                      .value();
    for (int i = 0; i < 2560; ++i) {  // 250 MiB of samples, ~4 shards of 64 MiB
      const Value values[] = {Value(Bytes{payload}), Value(static_cast<int64_t>(i))};
      if (!writer->WriteValues(values).ok()) state.SkipWithError("write failed");
    }
    if (!writer->Finish().has_value()) state.SkipWithError("finish failed");
    bytes += writer->raw_bytes_written();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK_CAPTURE(BM_Writer, none, std::nullopt)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Writer, zstd, std::string("zstd"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();

}  // namespace
}  // namespace ferry

BENCHMARK_MAIN();
