#include "ferry/status.h"

#include <cstdio>
#include <cstdlib>

#include "ferry/result.h"

namespace ferry {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

bool IsRetryable(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
         code == StatusCode::kAborted;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok() || context.empty()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

#define FERRY_DEFINE_ERROR_FACTORY(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
FERRY_DEFINE_ERROR_FACTORY(CancelledError, kCancelled)
FERRY_DEFINE_ERROR_FACTORY(UnknownError, kUnknown)
FERRY_DEFINE_ERROR_FACTORY(InvalidArgumentError, kInvalidArgument)
FERRY_DEFINE_ERROR_FACTORY(DeadlineExceededError, kDeadlineExceeded)
FERRY_DEFINE_ERROR_FACTORY(NotFoundError, kNotFound)
FERRY_DEFINE_ERROR_FACTORY(AlreadyExistsError, kAlreadyExists)
FERRY_DEFINE_ERROR_FACTORY(PermissionDeniedError, kPermissionDenied)
FERRY_DEFINE_ERROR_FACTORY(ResourceExhaustedError, kResourceExhausted)
FERRY_DEFINE_ERROR_FACTORY(FailedPreconditionError, kFailedPrecondition)
FERRY_DEFINE_ERROR_FACTORY(AbortedError, kAborted)
FERRY_DEFINE_ERROR_FACTORY(OutOfRangeError, kOutOfRange)
FERRY_DEFINE_ERROR_FACTORY(UnimplementedError, kUnimplemented)
FERRY_DEFINE_ERROR_FACTORY(InternalError, kInternal)
FERRY_DEFINE_ERROR_FACTORY(UnavailableError, kUnavailable)
FERRY_DEFINE_ERROR_FACTORY(DataLossError, kDataLoss)
FERRY_DEFINE_ERROR_FACTORY(UnauthenticatedError, kUnauthenticated)
#undef FERRY_DEFINE_ERROR_FACTORY

namespace internal_status {
void DieOnBadResultAccess(const Status& status) {
  std::fprintf(stderr, "ferry: value() called on a Result holding an error: %s\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace internal_status

}  // namespace ferry
