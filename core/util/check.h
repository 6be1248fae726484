// Copyright 2026 The zero3 Authors.
//
// check.h: invariants that abort with a message.
//
// Our Abseil (20220623) has no absl/log, so this header provides the small
// subset of CHECK macros the project needs. A CHECK states something that must
// hold if the program is correct; a failure is a bug, never bad user input.
// Bad input returns absl::Status (see status_macros.h).
//
//   ZR_CHECK(cond) << "what went wrong " << value;
//   ZR_CHECK_EQ(a, b) << "context";     // also _NE, _LT, _LE, _GT, _GE
//   ZR_CHECK_OK(status_expr) << "context";
//   ZR_DCHECK(cond);                     // compiled out under NDEBUG
//
// A failure prints "file:line: CHECK failed: <condition> <message>" to stderr
// and aborts. Thread-safe: the message is built on the failing thread and
// written with one call.

#ifndef ZERO3_CORE_UTIL_CHECK_H_
#define ZERO3_CORE_UTIL_CHECK_H_

#include <sstream>
#include <string>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"

namespace zero3 {
namespace internal_check {

// Collects the streamed message and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  ABSL_ATTRIBUTE_NORETURN ~CheckFailure();

  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets the ternary in ZR_CHECK have type void on both branches.
struct Voidify {
  void operator&(std::ostream&) {}
};

template <typename A, typename B>
std::string* MakeCheckOpString(const A& a, const B& b, const char* expr) {
  std::ostringstream os;
  os << expr << " (" << a << " vs. " << b << ")";
  return new std::string(os.str());
}

}  // namespace internal_check
}  // namespace zero3

#define ZR_CHECK(condition)                                      \
  ABSL_PREDICT_TRUE(condition)                                   \
  ? (void)0                                                      \
  : ::zero3::internal_check::Voidify() &                         \
        ::zero3::internal_check::CheckFailure(__FILE__, __LINE__, \
                                              #condition)        \
            .stream()

#define ZR_INTERNAL_CHECK_OP(op, a, b)                                    \
  for (auto zr_check_a_ = (a), zr_check_b_ = (b);                         \
       ABSL_PREDICT_FALSE(!(zr_check_a_ op zr_check_b_));)                \
  ::zero3::internal_check::CheckFailure(                                  \
      __FILE__, __LINE__,                                                 \
      ::zero3::internal_check::MakeCheckOpString(zr_check_a_, zr_check_b_, \
                                                 #a " " #op " " #b)       \
          ->c_str())                                                      \
      .stream()

#define ZR_CHECK_EQ(a, b) ZR_INTERNAL_CHECK_OP(==, a, b)
#define ZR_CHECK_NE(a, b) ZR_INTERNAL_CHECK_OP(!=, a, b)
#define ZR_CHECK_LT(a, b) ZR_INTERNAL_CHECK_OP(<, a, b)
#define ZR_CHECK_LE(a, b) ZR_INTERNAL_CHECK_OP(<=, a, b)
#define ZR_CHECK_GT(a, b) ZR_INTERNAL_CHECK_OP(>, a, b)
#define ZR_CHECK_GE(a, b) ZR_INTERNAL_CHECK_OP(>=, a, b)

#define ZR_CHECK_OK(expr)                                           \
  for (const ::absl::Status zr_check_status_ = (expr);              \
       ABSL_PREDICT_FALSE(!zr_check_status_.ok());)                 \
  ::zero3::internal_check::CheckFailure(__FILE__, __LINE__, #expr)  \
          .stream()                                                 \
      << zr_check_status_.ToString() << " "

#ifdef NDEBUG
#define ZR_DCHECK(condition) \
  while (false) ZR_CHECK(condition)
#else
#define ZR_DCHECK(condition) ZR_CHECK(condition)
#endif

#endif  // ZERO3_CORE_UTIL_CHECK_H_
