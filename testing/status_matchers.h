// Copyright 2026 The zero3 Authors.
//
// status_matchers.h: gMock matchers for absl::Status and absl::StatusOr.
//
//   EXPECT_THAT(DoThing(), IsOk());
//   EXPECT_THAT(Parse("x"), IsOkAndHolds(Eq(3)));
//   EXPECT_THAT(Parse("?"), StatusIs(absl::StatusCode::kInvalidArgument,
//                                    HasSubstr("line 1")));
//   ASSERT_OK_AND_ASSIGN(auto value, Parse("x"));
//
// Our Abseil predates absl/status/status_matchers.h, hence this header.

#ifndef ZERO3_TESTING_STATUS_MATCHERS_H_
#define ZERO3_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

class StatusIsMatcher {
 public:
  StatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                  ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  template <typename T>
  bool MatchAndExplain(const T& value,
                       ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(value);
    *listener << "whose status is " << status;
    return code_.Matches(status.code()) &&
           message_.Matches(std::string(status.message()));
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << " and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "does not match ";
    DescribeTo(os);
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}

  template <typename T>
  bool MatchAndExplain(const absl::StatusOr<T>& value,
                       ::testing::MatchResultListener* listener) const {
    if (!value.ok()) {
      *listener << "whose status is " << value.status();
      return false;
    }
    return ::testing::ExplainMatchResult(inner_, *value, listener);
  }
  void DescribeTo(std::ostream* os) const {
    *os << "is OK and holds a value that matches the inner matcher";
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "is not OK or holds a value that does not match";
  }

 private:
  InnerMatcher inner_;
};

}  // namespace internal

// Matches an OK absl::Status or absl::StatusOr<T>.
MATCHER(IsOk, "is OK") {
  const absl::Status& status = internal::GetStatus(arg);
  if (!status.ok()) *result_listener << "whose status is " << status;
  return status.ok();
}

// Matches a Status/StatusOr whose code and message match.
inline ::testing::PolymorphicMatcher<internal::StatusIsMatcher> StatusIs(
    ::testing::Matcher<absl::StatusCode> code,
    ::testing::Matcher<const std::string&> message = ::testing::_) {
  return ::testing::MakePolymorphicMatcher(
      internal::StatusIsMatcher(std::move(code), std::move(message)));
}

// Matches an OK StatusOr<T> whose value matches `inner`.
template <typename InnerMatcher>
::testing::PolymorphicMatcher<internal::IsOkAndHoldsMatcher<InnerMatcher>>
IsOkAndHolds(InnerMatcher inner) {
  return ::testing::MakePolymorphicMatcher(
      internal::IsOkAndHoldsMatcher<InnerMatcher>(std::move(inner)));
}

}  // namespace testing
}  // namespace zero3

#define ZR_TESTING_CONCAT_INNER_(a, b) a##b
#define ZR_TESTING_CONCAT_(a, b) ZR_TESTING_CONCAT_INNER_(a, b)

// Asserts that `expr` (a StatusOr) is OK and moves its value into `lhs`.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                      \
  ASSERT_OK_AND_ASSIGN_IMPL_(ZR_TESTING_CONCAT_(zr_test_so_, __LINE__), lhs, \
                             expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(so, lhs, expr) \
  auto so = (expr);                               \
  ASSERT_TRUE(so.ok()) << so.status();            \
  lhs = std::move(so).value()

#define ASSERT_OK(expr) ASSERT_THAT(expr, ::zero3::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT(expr, ::zero3::testing::IsOk())

#endif  // ZERO3_TESTING_STATUS_MATCHERS_H_
