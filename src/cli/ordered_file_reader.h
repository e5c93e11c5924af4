// OrderedFileReader: reads a list of local files on several threads and hands their contents
// out strictly in list order.
//
// Workers claim the next file, read it and park it until the consumer asks for it. They never
// run more than `window_files` files or `window_bytes` bytes ahead of the consumer, which bounds
// memory whatever the file sizes (one file larger than the byte window is still read, alone).
//
// Thread-safety: Next() from one consumer thread; the workers are internal std::jthreads that
// stop and join in the destructor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferry/result.h"

namespace ferry {

class OrderedFileReader {
 public:
  OrderedFileReader(std::vector<std::filesystem::path> paths, size_t threads, size_t window_files,
                    uint64_t window_bytes);
  ~OrderedFileReader();
  OrderedFileReader(const OrderedFileReader&) = delete;
  OrderedFileReader& operator=(const OrderedFileReader&) = delete;

  /// The contents of the next file in order, or the error reading it. \pre files remain.
  Result<std::string> Next();

 private:
  void Work(std::stop_token stop);

  const std::vector<std::filesystem::path> paths_;
  const size_t window_files_;
  const uint64_t window_bytes_;
  std::mutex mu_;
  std::condition_variable_any changed_;
  size_t next_claim_ = 0;     // next file a worker will read
  size_t next_deliver_ = 0;   // next file the consumer gets
  uint64_t bytes_ahead_ = 0;  // bytes read but not yet delivered
  std::map<size_t, Result<std::string>> ready_;
  std::vector<std::jthread> workers_;
};

}  // namespace ferry
