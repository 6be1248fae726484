// Copyright 2026 The zero3 Authors.

#include "sim/internal/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/check.h"

#if defined(__SANITIZE_ADDRESS__)
#define ZR_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZR_FIBER_ASAN 1
#endif
#endif

#ifdef ZR_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace zero3 {
namespace sim {
namespace internal {
namespace {

// Tells AddressSanitizer that the stack is about to change (no-op without it).
void StartSwitch(void** fake_stack, const void* bottom, size_t bytes) {
#ifdef ZR_FIBER_ASAN
  __sanitizer_start_switch_fiber(fake_stack, bottom, bytes);
#else
  (void)fake_stack, (void)bottom, (void)bytes;
#endif
}

void FinishSwitch(void* fake_stack, const void** old_bottom,
                  size_t* old_bytes) {
#ifdef ZR_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_bytes);
#else
  (void)fake_stack, (void)old_bottom, (void)old_bytes;
#endif
}

}  // namespace

absl::StatusOr<std::unique_ptr<Fiber>> Fiber::Create(
    std::function<void()> body) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = kStackBytes + page;
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map a ", kStackBytes >> 20,
                     " MiB stack for a simulated rank: ", strerror(errno)));
  }
  if (mprotect(mapping, page, PROT_NONE) != 0) {
    const int error = errno;
    munmap(mapping, bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot protect a simulated rank's stack guard: ", strerror(error),
        " (the process's memory maps are limited by vm.max_map_count)"));
  }
  return std::unique_ptr<Fiber>(new Fiber(std::move(body), mapping, bytes));
}

Fiber::Fiber(std::function<void()> body, void* mapping, size_t mapping_bytes)
    : body_(std::move(body)), mapping_(mapping), mapping_bytes_(mapping_bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ZR_CHECK(getcontext(&context_) == 0);
  context_.uc_stack.ss_sp = static_cast<char*>(mapping_) + page;
  context_.uc_stack.ss_size = mapping_bytes_ - page;
  context_.uc_link = nullptr;
  const auto self = reinterpret_cast<uintptr_t>(this);
  makecontext(&context_, reinterpret_cast<void (*)()>(&Fiber::Entry), 2,
              static_cast<unsigned int>(self >> 32),
              static_cast<unsigned int>(self & 0xffffffffu));
}

Fiber::~Fiber() { munmap(mapping_, mapping_bytes_); }

void Fiber::Entry(unsigned int high, unsigned int low) {
  auto* self = reinterpret_cast<Fiber*>((static_cast<uintptr_t>(high) << 32) |
                                        static_cast<uintptr_t>(low));
  FinishSwitch(nullptr, &self->caller_stack_bottom_,
               &self->caller_stack_bytes_);
  self->body_();
  self->finished_ = true;
  // The fiber ends here: its fake stack goes with it.
  StartSwitch(nullptr, self->caller_stack_bottom_, self->caller_stack_bytes_);
  setcontext(&self->caller_);
}

void Fiber::Resume() {
  ZR_CHECK(!finished_);
  StartSwitch(&caller_fake_stack_, context_.uc_stack.ss_sp,
              context_.uc_stack.ss_size);
  ZR_CHECK(swapcontext(&caller_, &context_) == 0);
  FinishSwitch(caller_fake_stack_, nullptr, nullptr);
}

void Fiber::Suspend() {
  StartSwitch(&fiber_fake_stack_, caller_stack_bottom_, caller_stack_bytes_);
  ZR_CHECK(swapcontext(&context_, &caller_) == 0);
  FinishSwitch(fiber_fake_stack_, &caller_stack_bottom_, &caller_stack_bytes_);
}

}  // namespace internal
}  // namespace sim
}  // namespace zero3
