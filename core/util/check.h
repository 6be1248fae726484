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

// Returns null when the comparison holds, else the failure message (leaked:
// the process is about to abort).
template <typename A, typename B>
std::string* MakeCheckOpString(const A& a, const B& b, const char* expr) {
  std::ostringstream os;
  os << expr << " (" << a << " vs. " << b << ")";
  return new std::string(os.str());
}

#define ZR_INTERNAL_DEFINE_CHECK_OP(name, op)                          \
  template <typename A, typename B>                                    \
  std::string* Check##name(const A& a, const B& b, const char* expr) { \
    if (ABSL_PREDICT_TRUE(a op b)) return nullptr;                     \
    return MakeCheckOpString(a, b, expr);                              \
  }
ZR_INTERNAL_DEFINE_CHECK_OP(EQ, ==)
ZR_INTERNAL_DEFINE_CHECK_OP(NE, !=)
ZR_INTERNAL_DEFINE_CHECK_OP(LT, <)
ZR_INTERNAL_DEFINE_CHECK_OP(LE, <=)
ZR_INTERNAL_DEFINE_CHECK_OP(GT, >)
ZR_INTERNAL_DEFINE_CHECK_OP(GE, >=)
#undef ZR_INTERNAL_DEFINE_CHECK_OP

}  // namespace internal_check
}  // namespace zero3

#define ZR_CHECK(condition)                                         \
  ABSL_PREDICT_TRUE(condition)                                      \
  ? (void)0                                                         \
  : ::zero3::internal_check::Voidify() &                            \
          ::zero3::internal_check::CheckFailure(__FILE__, __LINE__, \
                                                #condition)         \
              .stream()

#define ZR_INTERNAL_CHECK_OP(name, op, a, b)                                 \
  while (                                                                    \
      std::string* zr_check_message_ =                                       \
          ::zero3::internal_check::Check##name((a), (b), #a " " #op " " #b)) \
  ::zero3::internal_check::CheckFailure(__FILE__, __LINE__,                  \
                                        zr_check_message_->c_str())          \
      .stream()

#define ZR_CHECK_EQ(a, b) ZR_INTERNAL_CHECK_OP(EQ, ==, a, b)
#define ZR_CHECK_NE(a, b) ZR_INTERNAL_CHECK_OP(NE, !=, a, b)
#define ZR_CHECK_LT(a, b) ZR_INTERNAL_CHECK_OP(LT, <, a, b)
#define ZR_CHECK_LE(a, b) ZR_INTERNAL_CHECK_OP(LE, <=, a, b)
#define ZR_CHECK_GT(a, b) ZR_INTERNAL_CHECK_OP(GT, >, a, b)
#define ZR_CHECK_GE(a, b) ZR_INTERNAL_CHECK_OP(GE, >=, a, b)

#define ZR_CHECK_OK(expr)                                                   \
  for (const ::absl::Status zr_check_status_ = (expr);                      \
       ABSL_PREDICT_FALSE(!zr_check_status_.ok());)                         \
  ::zero3::internal_check::CheckFailure(__FILE__, __LINE__, #expr).stream() \
      << zr_check_status_.ToString() << " "

#ifdef NDEBUG
#define ZR_DCHECK(condition) \
  while (false) ZR_CHECK(condition)
#else
#define ZR_DCHECK(condition) ZR_CHECK(condition)
#endif

#endif  // ZERO3_CORE_UTIL_CHECK_H_
