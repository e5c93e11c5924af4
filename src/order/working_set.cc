#include "order/working_set.h"

#include <algorithm>
#include <numeric>

#include "base/int128.h"
#include "base/int_math.h"
#include "order/partition.h"

namespace ferry::internal_order {
namespace {

// The largest shuffle_block_size an EpochPlan takes.
constexpr uint64_t kMaxNarrowedBlock = uint64_t{1} << 30;

// Positions of a canonical sequence whose shards may be live together (the file comment's w).
uint64_t Window(const OrderOptions& o, uint64_t span) {
  if (!o.shuffle) return 0;
  const uint64_t bs = o.shuffle_block_size;
  uint64_t w = 0;
  switch (o.algo) {
    case ShuffleAlgo::kPy1s:
      w = 0;
      break;
    case ShuffleAlgo::kPy1b:
      w = bs;
      break;
    case ShuffleAlgo::kPy1br:
      w = bs + bs / 2 + bs / 8 + 1;
      break;
    case ShuffleAlgo::kPy1e:
      // A sample lands within (D + H) / 2 of where it lies (D = 1.25 bs, chunks H = bs / 2).
      w = bs + bs / 2 + bs / 4 + 1;
      break;
    case ShuffleAlgo::kNaive:
      w = span;
      break;
  }
  return std::min(w, span);
}

}  // namespace

uint64_t WorkingSet::Largest() const {
  return bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
}

WorkingSet EstimateWorkingSet(std::span<const StreamFootprint> streams, const OrderOptions& options,
                              const WorldShape& world) {
  WorkingSet out;
  uint64_t total = 0;
  for (const StreamFootprint& s : streams) total += s.samples;
  if (total == 0 || world.nodes == 0) {
    out.bytes.assign(streams.size(), 0);
    return out;
  }
  const uint32_t canonical = options.num_canonical_nodes != 0
                                 ? options.num_canonical_nodes
                                 : DefaultCanonicalNodes(world, options);
  const uint64_t per_node = canonical / std::gcd(uint64_t{canonical}, uint64_t{world.nodes});
  const uint64_t span = CeilDiv(total, canonical);
  const uint64_t w = Window(options, span);
  for (const StreamFootprint& s : streams) {
    uint64_t live = 0;
    if (s.samples > 0) {
      // Bytes of `n` of the stream's samples, rounded up.
      const auto bytes_of = [&](uint64_t n) {
        return static_cast<uint64_t>((static_cast<UInt128>(n) * s.bytes + s.samples - 1) /
                                     s.samples);
      };
      live = w == 0 ? s.max_shard_bytes : bytes_of(std::min(w, s.samples)) + 2 * s.max_shard_bytes;
      live = std::min(s.bytes, live * per_node);
    }
    out.bytes.push_back(live);
  }
  return out;
}

WorkingSetFit NarrowToFit(std::span<const StreamFootprint> streams, const OrderOptions& options,
                          const WorldShape& world, uint64_t room) {
  WorkingSetFit fit;
  fit.order = options;
  fit.asked = EstimateWorkingSet(streams, options, world);
  fit.used = fit.asked;
  fit.fits = fit.asked.Largest() <= room;
  if (fit.fits || !options.shuffle || options.algo == ShuffleAlgo::kPy1s) return fit;

  const auto try_order = [&](const OrderOptions& o) {
    WorkingSet ws = EstimateWorkingSet(streams, o, world);
    return std::pair<bool, WorkingSet>(ws.Largest() <= room, std::move(ws));
  };
  OrderOptions narrowed = options;
  // The canonical nodes stay those of the order asked for (py1s would default to 64 per node).
  if (narrowed.num_canonical_nodes == 0) {
    narrowed.num_canonical_nodes = DefaultCanonicalNodes(world, options);
  }
  // Naive has no block to shrink: py1e keeps its spirit (every sample moves) within a window.
  if (narrowed.algo == ShuffleAlgo::kNaive) narrowed.algo = ShuffleAlgo::kPy1e;
  // The working set grows with the block size: the largest that fits, by bisection.
  uint64_t lo = 0;  // fits (0: nothing known to fit)
  uint64_t hi = std::max<uint64_t>(1, options.shuffle_block_size);
  if (options.algo == ShuffleAlgo::kNaive) {
    uint64_t total = 0;
    for (const StreamFootprint& s : streams) total += s.samples;
    hi = std::clamp<uint64_t>(total, 1, kMaxNarrowedBlock);
  }
  for (uint64_t a = 1, b = hi; a <= b;) {
    const uint64_t mid = a + (b - a) / 2;
    narrowed.shuffle_block_size = mid;
    if (try_order(narrowed).first) {
      lo = mid;
      a = mid + 1;
    } else {
      b = mid - 1;
    }
  }
  if (lo > 0) {
    narrowed.shuffle_block_size = lo;
  } else {
    narrowed.algo = ShuffleAlgo::kPy1s;  // the least any shuffle needs
    narrowed.shuffle_block_size = options.shuffle_block_size;
  }
  auto [fits, ws] = try_order(narrowed);
  fit.order = narrowed;
  fit.narrowed = true;
  fit.fits = fits;
  fit.used = std::move(ws);
  return fit;
}

}  // namespace ferry::internal_order
