#include "storage/instrumented_store.h"

#include <string>
#include <type_traits>

#include "ferry/metrics/metrics.h"

namespace ferry {
namespace {

class InstrumentedStore : public ObjectStore {
 public:
  explicit InstrumentedStore(std::shared_ptr<ObjectStore> store)
      : store_(std::move(store)),
        prefix_("/ferry/storage/" + std::string(store_->scheme()) + "/"),
        requests_(metrics::GetCounter(prefix_ + "requests")),
        bytes_read_(metrics::GetCounter(prefix_ + "bytes_read")),
        bytes_written_(metrics::GetCounter(prefix_ + "bytes_written")),
        errors_(metrics::GetCounter(prefix_ + "errors")),
        in_flight_(metrics::GetGauge(prefix_ + "in_flight")) {}

  std::string_view scheme() const override { return store_->scheme(); }
  bool read_only() const override { return store_->read_only(); }
  std::string ToUrl(std::string_view key) const override { return store_->ToUrl(key); }
  std::optional<std::filesystem::path> LocalPath(std::string_view key) const override {
    return store_->LocalPath(key);
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    return Count([&] { return store_->Head(key); });
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    bool refused = false;  // by the caller's sink: its word, not the store's error
    return Count(
        [&] {
          return store_->Read(key, range, [&](std::string_view chunk) {
            bytes_read_.Add(chunk.size());
            Status status = sink(chunk);
            refused = !status.ok();
            return status;
          });
        },
        &refused);
  }

  Status Write(std::string_view key, const ByteSource& source) override {
    Status s = Count([&] { return store_->Write(key, source); });
    if (s.ok()) bytes_written_.Add(source.size);
    return s;
  }

  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    return Count([&] { return store_->List(prefix, recursive); });
  }

  Status Remove(std::string_view key) override {
    return Count([&] { return store_->Remove(key); });
  }

 private:
  template <typename Call>
  std::invoke_result_t<Call> Count(Call call, const bool* refused = nullptr) {
    requests_.Add();
    in_flight_.Add(1);
    auto result = call();
    in_flight_.Add(-1);
    if (!internal_status::ToStatus(result).ok() && !(refused != nullptr && *refused)) {
      errors_.Add();
    }
    return result;
  }

  const std::shared_ptr<ObjectStore> store_;
  const std::string prefix_;
  metrics::Counter& requests_;
  metrics::Counter& bytes_read_;
  metrics::Counter& bytes_written_;
  metrics::Counter& errors_;
  metrics::Gauge& in_flight_;
};

}  // namespace

std::shared_ptr<ObjectStore> Instrument(std::shared_ptr<ObjectStore> store) {
  return std::make_shared<InstrumentedStore>(std::move(store));
}

}  // namespace ferry
