// Copyright 2026 The zero3 Authors.
//
// fiber.h: a cooperative thread of execution on a stack of its own, switched
// to and from by the thread that owns it (ucontext). A simulated rank runs on
// a fiber rather than an operating-system thread, so a switch between ranks
// costs a function call's worth, not a futex wake and a kernel context
// switch, and a world of thousands of ranks does not meet the process's
// thread limit. The stack is reserved, not committed: only the pages a rank
// touches take memory; a guard page below it turns an overflow into a fault.
//
// Thread-safety: a fiber is resumed only from the thread that created it.

#ifndef ZERO3_SIM_INTERNAL_FIBER_H_
#define ZERO3_SIM_INTERNAL_FIBER_H_

#include <ucontext.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"

namespace zero3 {
namespace sim {
namespace internal {

class Fiber {
 public:
  // Stack reserved for each fiber (committed page by page as it is used),
  // as large as a thread's default.
  static constexpr size_t kStackBytes = size_t{8} << 20;

  // A fiber that runs `body` when first resumed. ResourceExhausted when the
  // stack cannot be mapped.
  static absl::StatusOr<std::unique_ptr<Fiber>> Create(
      std::function<void()> body);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // From the owning thread (not a fiber): runs the fiber until it calls
  // Suspend or its body returns. Not after finished().
  void Resume();
  // From inside the fiber: returns to the Resume that ran it.
  void Suspend();
  // Whether the body has returned.
  bool finished() const { return finished_; }

 private:
  Fiber(std::function<void()> body, void* mapping, size_t mapping_bytes);
  static void Entry(unsigned int high, unsigned int low);

  std::function<void()> body_;
  void* mapping_;  // guard page, then the stack
  size_t mapping_bytes_;
  ucontext_t context_;
  ucontext_t caller_;
  bool finished_ = false;
  // AddressSanitizer's view of the switches (unused without it).
  void* caller_fake_stack_ = nullptr;
  void* fiber_fake_stack_ = nullptr;
  const void* caller_stack_bottom_ = nullptr;
  size_t caller_stack_bytes_ = 0;
};

}  // namespace internal
}  // namespace sim
}  // namespace zero3

#endif  // ZERO3_SIM_INTERNAL_FIBER_H_
