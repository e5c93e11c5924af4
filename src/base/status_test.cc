#include "ferry/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ferry/result.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

// Every code with its canonical name, its factory and whether a caller may retry it. The numbers
// are part of the contract (they map one to one onto absl/gRPC codes).
struct CodeCase {
  StatusCode code;
  int number;
  std::string_view name;
  Status (*factory)(std::string);
  bool retryable;
};

const std::vector<CodeCase>& AllCodes() {
  static const auto* cases = new std::vector<CodeCase>{
      {StatusCode::kCancelled, 1, "CANCELLED", CancelledError, false},
      {StatusCode::kUnknown, 2, "UNKNOWN", UnknownError, false},
      {StatusCode::kInvalidArgument, 3, "INVALID_ARGUMENT", InvalidArgumentError, false},
      {StatusCode::kDeadlineExceeded, 4, "DEADLINE_EXCEEDED", DeadlineExceededError, true},
      {StatusCode::kNotFound, 5, "NOT_FOUND", NotFoundError, false},
      {StatusCode::kAlreadyExists, 6, "ALREADY_EXISTS", AlreadyExistsError, false},
      {StatusCode::kPermissionDenied, 7, "PERMISSION_DENIED", PermissionDeniedError, false},
      {StatusCode::kResourceExhausted, 8, "RESOURCE_EXHAUSTED", ResourceExhaustedError, false},
      {StatusCode::kFailedPrecondition, 9, "FAILED_PRECONDITION", FailedPreconditionError, false},
      {StatusCode::kAborted, 10, "ABORTED", AbortedError, true},
      {StatusCode::kOutOfRange, 11, "OUT_OF_RANGE", OutOfRangeError, false},
      {StatusCode::kUnimplemented, 12, "UNIMPLEMENTED", UnimplementedError, false},
      {StatusCode::kInternal, 13, "INTERNAL", InternalError, false},
      {StatusCode::kUnavailable, 14, "UNAVAILABLE", UnavailableError, true},
      {StatusCode::kDataLoss, 15, "DATA_LOSS", DataLossError, false},
      {StatusCode::kUnauthenticated, 16, "UNAUTHENTICATED", UnauthenticatedError, false},
  };
  return *cases;
}

TEST(StatusCodeTest, NumbersMatchTheCanonicalSet) {
  EXPECT_EQ(static_cast<int>(StatusCode::kOk), 0);
  for (const CodeCase& c : AllCodes()) {
    EXPECT_EQ(static_cast<int>(c.code), c.number) << c.name;
  }
}

TEST(StatusCodeTest, NamesAreCanonical) {
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
  for (const CodeCase& c : AllCodes()) {
    EXPECT_EQ(StatusCodeName(c.code), c.name);
  }
  // A number outside the enum (e.g. read from a corrupt file) still gets a printable name.
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(99)), "UNKNOWN_CODE");
}

TEST(StatusCodeTest, OnlyTransientCodesAreRetryable) {
  EXPECT_FALSE(IsRetryable(StatusCode::kOk));
  for (const CodeCase& c : AllCodes()) {
    EXPECT_EQ(IsRetryable(c.code), c.retryable) << c.name;
  }
}

TEST(StatusTest, DefaultIsOk) {
  const Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(Status::Ok(), s);
}

TEST(StatusTest, FactoriesSetCodeAndMessage) {
  for (const CodeCase& c : AllCodes()) {
    const Status s = c.factory("shard.00000.mds: bad");
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), c.code) << c.name;
    EXPECT_EQ(s.message(), "shard.00000.mds: bad") << c.name;
    EXPECT_EQ(s, Status(c.code, "shard.00000.mds: bad")) << c.name;
  }
}

TEST(StatusTest, ToStringIsNameColonMessage) {
  EXPECT_EQ(DataLossError("shard.00000.mds: offsets[3] = 99 is past the end of the file (80 bytes)")
                .ToString(),
            "DATA_LOSS: shard.00000.mds: offsets[3] = 99 is past the end of the file (80 bytes)");
  EXPECT_EQ(NotFoundError("").ToString(), "NOT_FOUND: ");
}

TEST(StatusTest, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(NotFoundError("a"), NotFoundError("a"));
  EXPECT_NE(NotFoundError("a"), NotFoundError("b"));
  EXPECT_NE(NotFoundError("a"), DataLossError("a"));
  EXPECT_NE(NotFoundError(""), Status::Ok());
}

TEST(StatusTest, WithContextPrefixesTheMessageAndKeepsTheCode) {
  const Status inner = DataLossError("offsets[3] is past the end");
  const Status outer = inner.WithContext("shard.00007.mds");
  EXPECT_EQ(outer.code(), StatusCode::kDataLoss);
  EXPECT_EQ(outer.message(), "shard.00007.mds: offsets[3] is past the end");
  // The original is a value and stays unchanged.
  EXPECT_EQ(inner.message(), "offsets[3] is past the end");
  // Context nests outermost first.
  EXPECT_EQ(outer.WithContext("s3://bucket/ds").ToString(),
            "DATA_LOSS: s3://bucket/ds: shard.00007.mds: offsets[3] is past the end");
}

TEST(StatusTest, WithContextLeavesOkAndEmptyContextAlone) {
  EXPECT_EQ(Status::Ok().WithContext("reading index.json"), Status::Ok());
  EXPECT_EQ(NotFoundError("x").WithContext(""), NotFoundError("x"));
}

TEST(StatusTest, CopiesAndMovesAreIndependentValues) {
  Status a = UnavailableError("503 from s3");
  Status b = a;
  EXPECT_EQ(a, b);
  Status c = std::move(a);
  EXPECT_EQ(c, b);
  b = InternalError("other");
  EXPECT_EQ(c, UnavailableError("503 from s3"));
}

// --- Result<T> -----------------------------------------------------------------------------

TEST(ResultTest, HoldsAValue) {
  Result<int> r = 42;
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(r.value_or(7), 42);
  r.value() = 43;
  EXPECT_EQ(*r, 43);
}

TEST(ResultTest, HoldsAnError) {
  const Result<int> r = NotFoundError("gs://b/index.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error(), NotFoundError("gs://b/index.json"));
  EXPECT_EQ(r.status(), NotFoundError("gs://b/index.json"));
  EXPECT_EQ(r.value_or(7), 7);
}

TEST(ResultTest, OkStatusWithoutValueBecomesInternal) {
  const Result<int> r = Status::Ok();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInternal);
  EXPECT_FALSE(r.status().ok());
}

TEST(ResultTest, ConvertsFromConstructibleTypes) {
  const Result<std::string> r = "text";  // const char[5] -> std::string
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, "text");
  EXPECT_EQ(r->size(), 4u);
}

TEST(ResultTest, ArrowReachesMembers) {
  Result<std::vector<int>> r = std::vector<int>{1, 2, 3};
  EXPECT_EQ(r->size(), 3u);
  r->push_back(4);
  EXPECT_EQ(r->back(), 4);
}

TEST(ResultTest, MoveOnlyPayload) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(**r, 5);
  std::unique_ptr<int> taken = std::move(r).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 5);

  Result<std::unique_ptr<int>> moved_from = std::make_unique<int>(6);
  Result<std::unique_ptr<int>> moved_to = std::move(moved_from);
  ASSERT_TRUE(moved_to.has_value());
  EXPECT_EQ(**moved_to, 6);

  std::unique_ptr<int> deref = *Result<std::unique_ptr<int>>(std::make_unique<int>(8));
  EXPECT_EQ(*deref, 8);
}

TEST(ResultTest, ErrorCanBeMovedOut) {
  Result<std::unique_ptr<int>> r = PermissionDeniedError("az://c/key");
  const Status s = std::move(r).error();
  EXPECT_EQ(s, PermissionDeniedError("az://c/key"));
}

TEST(ResultDeathTest, ValueOnErrorAbortsWithTheStatus) {
  const Result<int> r = DataLossError("shard.00001.mds: bad magic");
  EXPECT_DEATH((void)r.value(),
               "value\\(\\) called on a Result holding an error: DATA_LOSS: shard.00001.mds: bad "
               "magic");
}

// --- FERRY_RETURN_IF_ERROR / FERRY_ASSIGN_OR_RETURN ------------------------------------------

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgumentError("x must be positive, got " + std::to_string(x));
  return x;
}

Result<std::unique_ptr<int>> MakeBox(int x) {
  if (x < 0) return OutOfRangeError("negative box");
  return std::make_unique<int>(x);
}

Status CheckStatus(const Status& s, int* reached) {
  FERRY_RETURN_IF_ERROR(s);
  ++*reached;
  return Status::Ok();
}

Status CheckResult(int x, int* reached) {
  FERRY_RETURN_IF_ERROR(ParsePositive(x));  // a Result<T> works too
  ++*reached;
  return Status::Ok();
}

Result<int> SumOfTwo(int a, int b, int* reached) {
  FERRY_ASSIGN_OR_RETURN(int first, ParsePositive(a));
  ++*reached;
  FERRY_ASSIGN_OR_RETURN(const int second, ParsePositive(b));  // twice in one scope
  ++*reached;
  return first + second;
}

Status AssignExisting(int x, int* out) {
  int value = -1;
  FERRY_ASSIGN_OR_RETURN(value, ParsePositive(x));
  *out = value;
  return Status::Ok();
}

Result<int> UnboxPlusOne(int x) {
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(x));
  return *box + 1;
}

TEST(StatusMacrosTest, ReturnIfErrorPassesOkThrough) {
  int reached = 0;
  EXPECT_TRUE(CheckStatus(Status::Ok(), &reached).ok());
  EXPECT_EQ(reached, 1);
  EXPECT_TRUE(CheckResult(3, &reached).ok());
  EXPECT_EQ(reached, 2);
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheErrorEarly) {
  int reached = 0;
  EXPECT_EQ(CheckStatus(UnavailableError("503"), &reached), UnavailableError("503"));
  EXPECT_EQ(CheckResult(-2, &reached), InvalidArgumentError("x must be positive, got -2"));
  EXPECT_EQ(reached, 0);
}

TEST(StatusMacrosTest, AssignOrReturnAssignsValues) {
  int reached = 0;
  const Result<int> r = SumOfTwo(2, 3, &reached);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(reached, 2);

  int out = 0;
  EXPECT_TRUE(AssignExisting(9, &out).ok());
  EXPECT_EQ(out, 9);
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesTheFirstError) {
  int reached = 0;
  Result<int> r = SumOfTwo(-1, 3, &reached);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), InvalidArgumentError("x must be positive, got -1"));
  EXPECT_EQ(reached, 0);

  r = SumOfTwo(1, 0, &reached);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), InvalidArgumentError("x must be positive, got 0"));
  EXPECT_EQ(reached, 1);

  int out = 7;
  EXPECT_EQ(AssignExisting(-4, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, 7);
}

TEST(StatusMacrosTest, AssignOrReturnMovesMoveOnlyValues) {
  const Result<int> ok = UnboxPlusOne(41);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 42);
  const Result<int> bad = UnboxPlusOne(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error(), OutOfRangeError("negative box"));
}

}  // namespace
}  // namespace ferry
