// LinkEstimator: what the fetches crossing a link say about it (how long one takes, how large
// one is, how many bytes per second all of them move together) and, by Little's law, how many
// fetches must be in flight to move a given rate. The stream's Prefetcher and FileDataset's
// FetchAhead both size their concurrency with it, so both follow one law with one set of
// constants.
//
// Thread-safety: none; its owner serializes the calls.
#pragma once

#include <cstdint>

namespace ferry::internal_cache {

/// Weight of a new measurement in the engine's moving averages.
inline constexpr double kEwmaWeight = 0.3;

/// `average` moved towards `sample` by kEwmaWeight; the first sample (average 0) is taken whole.
inline double Ewma(double average, double sample) {
  return average == 0 ? sample : average + kEwmaWeight * (sample - average);
}

class LinkEstimator {
 public:
  /// Little's law with margin: keep twice what the measured latency asks for in flight, so that
  /// one slow fetch does not leave the link idle.
  static constexpr double kHeadroom = 2;

  /// A fetch that moved `bytes` over the link in `seconds` while `concurrent` fetches (itself
  /// included) shared it. Fetches that took no time (a local hit) say nothing and are ignored.
  void Record(double seconds, uint64_t bytes, uint32_t concurrent);

  bool measured() const { return fetches_ > 0; }
  uint64_t fetches() const { return fetches_; }
  /// Seconds one fetch takes, round trip and transfer.
  double latency_s() const { return latency_s_; }
  double mean_bytes() const { return mean_bytes_; }
  /// Bytes per second of all fetches together.
  double bandwidth() const { return bandwidth_; }

  /// Fetches in flight that move `bytes_per_s`: bytes_per_s x latency x kHeadroom / mean bytes
  /// (0 until a fetch is recorded).
  double FetchesFor(double bytes_per_s) const;

 private:
  uint64_t fetches_ = 0;
  double latency_s_ = 0;
  double mean_bytes_ = 0;
  double bandwidth_ = 0;
};

}  // namespace ferry::internal_cache
