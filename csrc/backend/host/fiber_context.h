// SPDX-License-Identifier: Apache-2.0
// The stack switch under the fiber scheduler. Boost.Context's fcontext saves the callee-saved
// registers and swaps stacks in user space; glibc's swapcontext, the fallback where the build did
// not find Boost.Context, also saves and restores the signal mask, a system call on every switch,
// which made switching most of a host launch's time. CMake's LOOM_HOST_FIBERS picks the one built
// (see the root CMakeLists.txt) and defines LOOM_HOST_FIBERS_FCONTEXT to 1 or 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#if !defined(LOOM_HOST_FIBERS_FCONTEXT)
#error "LOOM_HOST_FIBERS_FCONTEXT must be defined by the build (0 or 1)"
#endif

#if LOOM_HOST_FIBERS_FCONTEXT
#include <boost/context/detail/fcontext.hpp>
#else
#include <ucontext.h>
#endif

namespace loom::backend::host {

/// A suspended execution: the scheduler's loop, or a fiber (started or not). Lives at a fixed
/// address while it is suspended.
class FiberContext {
 public:
  /// "fcontext" or "ucontext": what this build switches with.
  static constexpr const char* kName = LOOM_HOST_FIBERS_FCONTEXT ? "fcontext" : "ucontext";

  /// Makes this context run `entry(arg)` on [stack, stack + size) when it is first resumed.
  /// `entry` must never return: it ends by switching away for good.
  void start(char* stack, size_t size, void (*entry)(void*), void* arg);

  /// Suspends the running code into `self` and resumes `to`; returns once something resumes
  /// `self`.
  static void swap(FiberContext& self, FiberContext& to);

 private:
  void (*entry_)(void*) = nullptr;
  void* arg_ = nullptr;
#if LOOM_HOST_FIBERS_FCONTEXT
  // fcontext switches are one-way: the jump hands the resumed side the suspended side's context,
  // which it stores where the suspended side asked (Handoff::from). The handoff lives on the
  // suspended side's stack, intact until it is resumed.
  struct Handoff {
    FiberContext* from;
    FiberContext* to;
  };
  static void trampoline(boost::context::detail::transfer_t t) {
    auto* h = static_cast<Handoff*>(t.data);
    h->from->fctx_ = t.fctx;
    FiberContext* self = h->to;
    self->entry_(self->arg_);
    std::abort();  // entry never returns
  }
  boost::context::detail::fcontext_t fctx_ = nullptr;
#else
  static void trampoline(unsigned hi, unsigned lo) {
    auto* self = reinterpret_cast<FiberContext*>((static_cast<uintptr_t>(hi) << 32) | lo);
    self->entry_(self->arg_);
    std::abort();  // entry never returns
  }
  static void makeContext(FiberContext* self, char* stack, size_t size);
  ucontext_t uc_;
#endif
};

#if LOOM_HOST_FIBERS_FCONTEXT

inline void FiberContext::start(char* stack, size_t size, void (*entry)(void*), void* arg) {
  entry_ = entry;
  arg_ = arg;
  // make_fcontext takes the top of the stack: it grows down.
  fctx_ = boost::context::detail::make_fcontext(stack + size, size, &FiberContext::trampoline);
}

inline void FiberContext::swap(FiberContext& self, FiberContext& to) {
  Handoff h{&self, &to};
  const boost::context::detail::transfer_t t = boost::context::detail::jump_fcontext(to.fctx_, &h);
  // Resumed: by a swap that suspended its caller into t.data's `from`.
  static_cast<Handoff*>(t.data)->from->fctx_ = t.fctx;
}

#else

// getcontext returns twice, so it lives in its own small function: no caller locals to clobber.
__attribute__((noinline)) inline void FiberContext::makeContext(FiberContext* self, char* stack,
                                                                size_t size) {
  getcontext(&self->uc_);
  self->uc_.uc_stack.ss_sp = stack;
  self->uc_.uc_stack.ss_size = size;
  self->uc_.uc_link = nullptr;
  const auto p = reinterpret_cast<uintptr_t>(self);
  makecontext(&self->uc_, reinterpret_cast<void (*)()>(&FiberContext::trampoline), 2,
              static_cast<unsigned>(p >> 32), static_cast<unsigned>(p & 0xffffffffu));
}

inline void FiberContext::start(char* stack, size_t size, void (*entry)(void*), void* arg) {
  entry_ = entry;
  arg_ = arg;
  makeContext(this, stack, size);
}

inline void FiberContext::swap(FiberContext& self, FiberContext& to) {
  swapcontext(&self.uc_, &to.uc_);
}

#endif

}  // namespace loom::backend::host
