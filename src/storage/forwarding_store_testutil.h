// ForwardingStore: an ObjectStore that hands every call to another store, for tests whose store
// changes a call or two (a Read slowed, held at a byte, recorded) and keeps the rest; and
// OpenWrapped, the factory of a test scheme ("held" + "file:///x") wrapping the store of the
// URL that follows its prefix. Test-only.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"

namespace ferry::testing {

class ForwardingStore : public ObjectStore {
 public:
  /// `scheme`, when given, is the wrapper's own (its URLs are `scheme` + the inner store's URL
  /// less its scheme, "held" + "file:///x"); otherwise it passes for the inner store.
  explicit ForwardingStore(std::shared_ptr<ObjectStore> inner, std::string scheme = "")
      : inner_(std::move(inner)), scheme_(std::move(scheme)) {}

  std::string_view scheme() const override {
    return scheme_.empty() ? inner_->scheme() : std::string_view(scheme_);
  }
  std::string ToUrl(std::string_view key) const override {
    if (scheme_.empty()) return inner_->ToUrl(key);
    const std::string url = inner_->ToUrl(key);
    return scheme_.substr(0, scheme_.size() - inner_->scheme().size()) + url;
  }
  std::optional<std::filesystem::path> LocalPath(std::string_view key) const override {
    return scheme_.empty() ? inner_->LocalPath(key) : std::nullopt;
  }
  Result<ObjectInfo> Head(std::string_view key) override { return inner_->Head(key); }
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    return inner_->Read(key, range, sink);
  }
  Status Write(std::string_view key, const ByteSource& source) override {
    return inner_->Write(key, source);
  }
  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    return inner_->List(prefix, recursive);
  }
  Status Remove(std::string_view key) override { return inner_->Remove(key); }

 protected:
  ObjectStore& inner() const { return *inner_; }

 private:
  std::shared_ptr<ObjectStore> inner_;
  std::string scheme_;
};

/// The store of `url` less its first `prefix.size()` characters, wrapped in a `Store` (a
/// ForwardingStore whose scheme is `prefix` + the inner scheme): the body of a test scheme's
/// StoreFactory.
template <typename Store>
Result<StoreAndKey> OpenWrapped(std::string_view url, std::string_view prefix) {
  FERRY_ASSIGN_OR_RETURN(StoreAndKey inner, OpenUrl(url.substr(prefix.size())));
  const std::string scheme = std::string(prefix) + std::string(inner.store->scheme());
  return StoreAndKey{std::make_shared<Store>(inner.store, scheme), inner.key};
}

}  // namespace ferry::testing
