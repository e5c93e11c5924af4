// ferry::Result<T>: a T or the Status that explains why there is none.
//
// The surface follows std::expected<T, Status> (has_value, value, error, operator*, operator->)
// so that moving to C++23 is mechanical. value() on an error is a programming bug and aborts
// with the status printed; use has_value() or FERRY_ASSIGN_OR_RETURN.
//
// Thread-safety: a value type, like the T it holds.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

#include "ferry/status.h"

namespace ferry {

namespace internal_status {
[[noreturn]] void DieOnBadResultAccess(const Status& status);
}  // namespace internal_status

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cvref_t<T>, Status>, "use Status directly");

 public:
  /// \pre !status.ok(): an OK status carries no value, so it is turned into kInternal.
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<0>(data_).ok()) {
      data_ = Status(StatusCode::kInternal, "Result constructed from an OK status without value");
    }
  }
  template <typename U = T>
  requires std::is_constructible_v<T, U&&> &&(!std::is_same_v<std::remove_cvref_t<U>, Status>)&&(
      !std::is_same_v<std::remove_cvref_t<U>, Result>)Result(U&& value)
      : data_(std::in_place_index<1>, std::forward<U>(value)) {}  // NOLINT

  bool has_value() const { return data_.index() == 1; }
  explicit operator bool() const { return has_value(); }
  bool ok() const { return has_value(); }

  const T& value() const& {
    Check();
    return std::get<1>(data_);
  }
  T& value() & {
    Check();
    return std::get<1>(data_);
  }
  T&& value() && {
    Check();
    return std::get<1>(std::move(data_));
  }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  /// \pre !has_value()
  const Status& error() const& { return std::get<0>(data_); }
  Status error() && { return std::get<0>(std::move(data_)); }

  /// OK when a value is held, else the error.
  Status status() const { return has_value() ? Status() : std::get<0>(data_); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<1>(data_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void Check() const {
    if (!has_value()) internal_status::DieOnBadResultAccess(std::get<0>(data_));
  }

  std::variant<Status, T> data_;
};

}  // namespace ferry
