#include "cli/ordered_file_reader.h"

#include "base/file_util.h"

namespace ferry {

OrderedFileReader::OrderedFileReader(std::vector<std::filesystem::path> paths, size_t threads,
                                     size_t window_files, uint64_t window_bytes)
    : paths_(std::move(paths)),
      window_files_(std::max<size_t>(1, window_files)),
      window_bytes_(window_bytes) {
  const size_t n = std::max<size_t>(1, std::min(threads, paths_.size()));
  workers_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    workers_.emplace_back([this](std::stop_token stop) { Work(stop); });
  }
}

OrderedFileReader::~OrderedFileReader() {
  for (auto& w : workers_) w.request_stop();
  changed_.notify_all();
  workers_.clear();  // joins
}

void OrderedFileReader::Work(std::stop_token stop) {
  for (;;) {
    size_t i;
    {
      std::unique_lock lock(mu_);
      // Claim the next file once it is inside both windows (the consumer's next file always is).
      const bool go = changed_.wait(lock, stop, [&] {
        return next_claim_ >= paths_.size() ||
               (next_claim_ < next_deliver_ + window_files_ &&
                (bytes_ahead_ < window_bytes_ || next_claim_ == next_deliver_));
      });
      if (!go || next_claim_ >= paths_.size()) return;
      i = next_claim_++;
    }
    Result<std::string> data = ReadFileToString(paths_[i]);
    std::lock_guard lock(mu_);
    if (data) bytes_ahead_ += data->size();
    ready_.emplace(i, std::move(data));
    changed_.notify_all();
  }
}

Result<std::string> OrderedFileReader::Next() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return ready_.count(next_deliver_) > 0; });
  auto node = ready_.extract(next_deliver_);
  ++next_deliver_;
  if (node.mapped()) bytes_ahead_ -= node.mapped()->size();
  changed_.notify_all();
  return std::move(node.mapped());
}

}  // namespace ferry
