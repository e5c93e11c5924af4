// ferry::Status: the error value every library call returns (or carries inside a Result<T>).
//
// A Status is a canonical code plus a human message. The message names the file, URL or field
// at fault and never contains a secret. Whether an operation may be retried is decided from the
// code alone (IsRetryable), never by parsing the message.
//
// Thread-safety: a Status is a value; distinct objects may be used from distinct threads.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace ferry {

// The canonical code set (the same numbers as absl/gRPC, so they map one to one).
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

/// "NOT_FOUND", "DATA_LOSS", ... (the canonical spelling).
std::string_view StatusCodeName(StatusCode code);

/// True for the transient codes a caller may retry: kUnavailable, kDeadlineExceeded, kAborted.
bool IsRetryable(StatusCode code);

class [[nodiscard]] Status {
 public:
  /// An OK status.
  Status() = default;
  /// \pre code != kOk, or message is empty.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// "DATA_LOSS: shard.00000.mds: offsets[3] = 99 is past the end of the file (80 bytes)".
  std::string ToString() const;

  /// The same code with "context: " put in front of the message; OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status UnauthenticatedError(std::string message);

}  // namespace ferry

#define FERRY_STATUS_CONCAT_INNER_(a, b) a##b
#define FERRY_STATUS_CONCAT_(a, b) FERRY_STATUS_CONCAT_INNER_(a, b)

/// Evaluates `expr` (a Status or a Result<T>) and returns its error from the enclosing function.
#define FERRY_RETURN_IF_ERROR(expr)                                                           \
  do {                                                                                        \
    if (auto ferry_status_ = ::ferry::internal_status::ToStatus(expr); !ferry_status_.ok()) { \
      return ferry_status_;                                                                   \
    }                                                                                         \
  } while (false)

/// `FERRY_ASSIGN_OR_RETURN(auto x, MakeX());`: declares/assigns lhs from a Result<T>'s value, or
/// returns its error from the enclosing function.
#define FERRY_ASSIGN_OR_RETURN(lhs, expr) \
  FERRY_ASSIGN_OR_RETURN_IMPL_(FERRY_STATUS_CONCAT_(ferry_result_, __COUNTER__), lhs, expr)

#define FERRY_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                                   \
  if (!tmp.has_value()) return std::move(tmp).error(); \
  lhs = std::move(tmp).value()

namespace ferry::internal_status {
inline const Status& ToStatus(const Status& s) { return s; }
template <typename R>
Status ToStatus(const R& result) requires requires {
  result.status();
}
{ return result.status(); }
}  // namespace ferry::internal_status
