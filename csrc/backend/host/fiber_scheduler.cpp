// SPDX-License-Identifier: Apache-2.0
// The fiber scheduler of the host backend: CUDA threads as fibers on one OS thread (the stack
// switch is in fiber_context.h).
//
// A launch builds one Fiber per CUDA thread (per block, or per grid when cooperative) and runs
// them round-robin from a ready queue. A fiber runs until it finishes, yields (spin hint), or has
// to wait: at a block barrier, a warp collective or a grid barrier. The last arrival at such a
// rendezvous computes its result, marks the waiters ready and carries on without switching. When
// the ready queue runs dry while fibers still wait, nothing can ever wake them: that is a deadlock,
// reported with what each group waits for. Errors found inside a fiber are recorded and the
// fiber switches to the scheduler for good; the launch then throws. Abandoned fibers are not
// unwound (kernel code owns no resources that need it).
#include "backend/host/fiber_scheduler.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/host/fiber_context.h"
#include "loom/support/error.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define LOOM_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define LOOM_FIBER_TSAN 1
#endif

// The running fiber's context on this OS thread, set around every switch into a fiber.
// Initial-exec: static TLS, so it sits at one offset from the thread pointer on every thread and
// kernel objects can reach it without symbols or TLS of their own. In a debugger: `p
// *loom_emu_running_thread`.
extern "C" {
__attribute__((visibility("hidden"),
               tls_model("initial-exec"))) thread_local LoomEmuThread* loom_emu_running_thread =
    nullptr;
}

namespace loom::backend::host {
namespace {

// AddressSanitizer must be told about every stack switch, or it reports false stack overflows
// and use-after-return; without ASan these compile to nothing.
inline void asanStartSwitch([[maybe_unused]] void** fakeStack, [[maybe_unused]] const void* bottom,
                            [[maybe_unused]] size_t size) {
#ifdef LOOM_FIBER_ASAN
  __sanitizer_start_switch_fiber(fakeStack, bottom, size);
#endif
}
// A fiber's frames that never return (the entry's, and every frame of an abandoned fiber) leave
// their redzones poisoned. Stacks are reused by the next launch and their pages by the next mmap
// (NVRTC's own stacks among them), so each stack is cleared before it is used and before it is
// unmapped; otherwise ASan reports those stale redzones against the next owner.
inline void asanUnpoison([[maybe_unused]] void* p, [[maybe_unused]] size_t bytes) {
#ifdef LOOM_FIBER_ASAN
  __asan_unpoison_memory_region(p, bytes);
#endif
}
inline void asanFinishSwitch([[maybe_unused]] void* fakeStack,
                             [[maybe_unused]] const void** oldBottom,
                             [[maybe_unused]] size_t* oldSize) {
#ifdef LOOM_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fakeStack, oldBottom, oldSize);
#endif
}

// ThreadSanitizer must be told which fiber runs (each has its own shadow stack and clock); a
// switch with flags 0 orders everything before it before everything after, which is what one OS
// thread running the fibers in turn gives. Without TSan these compile to nothing.
inline void* tsanCurrentFiber() {
#ifdef LOOM_FIBER_TSAN
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}
inline void* tsanCreateFiber() {
#ifdef LOOM_FIBER_TSAN
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}
inline void tsanDestroyFiber([[maybe_unused]] void* fiber) {
#ifdef LOOM_FIBER_TSAN
  if (fiber != nullptr) __tsan_destroy_fiber(fiber);
#endif
}
inline void tsanSwitchTo([[maybe_unused]] void* fiber) {
#ifdef LOOM_FIBER_TSAN
  __tsan_switch_to_fiber(fiber, 0);
#endif
}

// More guarded stacks than this would approach the kernel's default limit of 65530 mappings.
constexpr uint64_t kMaxGuardedFibers = 16384;
// Yields in a row with no fiber finishing or passing a rendezvous: a spin-wait that cannot end.
constexpr uint64_t kMaxYieldsWithoutProgress = uint64_t{1} << 22;

std::string str(const LoomEmuUint3& v) { return fmt::format("({},{},{})", v.x, v.y, v.z); }

const char* warpOpName(int op) {
  static const char* const kNames[] = {"__shfl_sync",     "__shfl_up_sync", "__shfl_down_sync",
                                       "__shfl_xor_sync", "__ballot_sync",  "__any_sync",
                                       "__all_sync",      "__syncwarp"};
  return op >= 0 && op < LOOM_EMU_WARP_OP_COUNT ? kNames[op] : "warp collective";
}

std::string laneList(unsigned mask) {
  std::vector<unsigned> lanes;
  for (unsigned l = 0; l < 32; ++l) {
    if (mask & (1u << l)) lanes.push_back(l);
  }
  return fmt::format("{}", fmt::join(lanes, ","));
}

std::string hex(unsigned v) { return fmt::format("{:#x}", v); }

/// A block of fiber stacks in one mapping, each with a PROT_NONE guard page below it.
class StackPool {
 public:
  StackPool(size_t count, size_t stackBytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    count_ = count;
    requested_ = stackBytes;
    guarded_ = count <= kMaxGuardedFibers;
    stride_ = (std::max<size_t>(stackBytes, 16 * 1024) + page - 1) / page * page;
    if (guarded_) stride_ += page;
    bytes_ = stride_ * count;
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    LOOM_CHECK(p != MAP_FAILED, "host backend: cannot map ", count, " fiber stacks of ", stride_,
               " bytes");
    base_ = static_cast<char*>(p);
    if (guarded_) {
      for (size_t i = 0; i < count; ++i) mprotect(base_ + i * stride_, page, PROT_NONE);
      guard_ = page;
    }
  }
  ~StackPool() {
    asanUnpoison(base_, bytes_);
    munmap(base_, bytes_);
  }
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  char* stack(size_t i) const { return base_ + i * stride_ + guard_; }
  size_t stackSize() const { return stride_ - guard_; }
  /// True when this pool serves `count` stacks made for `stackBytes`.
  bool fits(size_t count, size_t stackBytes) const {
    return count <= count_ && stackBytes == requested_;
  }

 private:
  size_t count_ = 0;
  size_t requested_ = 0;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  size_t stride_ = 0;
  size_t guard_ = 0;
  bool guarded_ = false;
};

enum class FiberState { Ready, AtBarrier, AtWarp, AtGridSync, Done, Aborted };

class Scheduler;
struct Block;

struct Fiber {
  FiberContext ctx;
  char* stack = nullptr;
  size_t stackSize = 0;
  LoomEmuThread t{};
  Scheduler* sched = nullptr;
  Block* block = nullptr;
  unsigned warp = 0;
  FiberState state = FiberState::Ready;
  int barrierResult = 0;
  void* asanFakeStack = nullptr;
  void* tsanFiber = nullptr;  // ThreadSanitizer's fiber (builds with TSan only)
};

struct Warp {
  unsigned existing = 0;  ///< lanes that exist (the last warp of a block may be partial)
  unsigned exited = 0;
  bool active = false;  ///< a collective is gathering lanes
  int op = 0;
  unsigned mask = 0;
  unsigned arrived = 0;
  uint64_t values[32] = {};
  int params[32] = {};
  int widths[32] = {};
  uint64_t results[32] = {};
  Fiber* waiters[32] = {};
};

struct Block {
  LoomEmuUint3 idx{};
  unsigned size = 0;
  unsigned exited = 0;
  Fiber* firstExited = nullptr;
  unsigned arrived = 0;
  int barrierOp = 0;
  int accum = 0;
  std::vector<Fiber*> barrierWaiters;
  std::vector<Warp> warps;
  std::unique_ptr<std::max_align_t[]> dynamicSmem;
  std::map<unsigned, std::unique_ptr<std::max_align_t[]>> staticShared;
};

std::unique_ptr<std::max_align_t[]> poisonedBuffer(size_t bytes) {
  // Shared memory starts with garbage on a GPU too; 0xff bytes make a read before a write show up
  // as NaN or -1 instead of a plausible zero.
  const size_t n = (bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1;
  std::unique_ptr<std::max_align_t[]> buf(new std::max_align_t[n]);
  std::memset(static_cast<void*>(buf.get()), 0xff, n * sizeof(std::max_align_t));
  return buf;
}

class Scheduler {
 public:
  explicit Scheduler(const GridLaunch& launch) : launch_(launch) {}

  /// Sets up `blocks` (their fibers on stacks from `stacks`, starting at index 0) and runs them.
  void run(std::vector<Block*>& blocks, std::vector<Fiber>& fibers, const StackPool& stacks);

  // The LoomEmuApi entry points, called on a fiber's stack.
  int syncThreads(Fiber* f, int op, int predicate);
  uint64_t warpCollective(Fiber* f, int op, unsigned mask, uint64_t value, int param, int width);
  void gridSync(Fiber* f);
  void* staticShared(Fiber* f, unsigned site, size_t bytes);
  void yield(Fiber* f);
  /// Records the error and leaves the fiber for good. The message is built by `makeMessage`
  /// and every temporary of it is gone before the switch: the fiber's frames never unwind.
  template <typename MakeMessage>
  [[noreturn]] void fail(Fiber* f, MakeMessage&& makeMessage) {
    recordError(makeMessage());
    abandon(f);
  }
  void recordError(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  [[noreturn]] void abandon(Fiber* f);

  static void fiberMain(void* fiber);

 private:
  std::string where(const Fiber* f) const {
    return "thread " + str(f->t.thread_idx) + " of block " + str(f->t.block_idx);
  }
  void switchToScheduler(Fiber* f, bool finished = false) {
    // A finished fiber passes no fake-stack slot, so ASan frees its fake stack.
    asanStartSwitch(finished ? nullptr : &f->asanFakeStack, mainStackBottom_, mainStackSize_);
    tsanSwitchTo(tsanMain_);
    FiberContext::swap(f->ctx, main_);
    asanFinishSwitch(f->asanFakeStack, nullptr, nullptr);
  }
  void switchToFiber(Fiber* f) {
    void* fake = nullptr;
    asanStartSwitch(&fake, f->stack, f->stackSize);
    tsanSwitchTo(f->tsanFiber);
    FiberContext::swap(main_, f->ctx);
    asanFinishSwitch(fake, nullptr, nullptr);
  }
  void release(Fiber* f) {
    f->state = FiberState::Ready;
    ready_.push_back(f);
  }
  void onExit(Fiber* f);
  std::string deadlockReport(const std::vector<Block*>& blocks) const;

  const GridLaunch& launch_;
  FiberContext main_;
  void* tsanMain_ = tsanCurrentFiber();
  const void* mainStackBottom_ = nullptr;
  size_t mainStackSize_ = 0;
  std::deque<Fiber*> ready_;
  std::string error_;
  uint64_t gridThreads_ = 0;
  uint64_t gridExited_ = 0;
  std::vector<Fiber*> gridWaiters_;
  Fiber* firstGridExit_ = nullptr;
  uint64_t yieldsWithoutProgress_ = 0;
};

Fiber* fiberOf(LoomEmuThread* t) { return static_cast<Fiber*>(t->impl); }

int apiSyncThreads(LoomEmuThread* t, int op, int predicate) {
  return fiberOf(t)->sched->syncThreads(fiberOf(t), op, predicate);
}
uint64_t apiWarpCollective(LoomEmuThread* t, int op, unsigned mask, uint64_t value, int param,
                           int width) {
  return fiberOf(t)->sched->warpCollective(fiberOf(t), op, mask, value, param, width);
}
void apiGridSync(LoomEmuThread* t) { fiberOf(t)->sched->gridSync(fiberOf(t)); }
void* apiStaticShared(LoomEmuThread* t, unsigned site, size_t bytes, size_t /*align*/) {
  return fiberOf(t)->sched->staticShared(fiberOf(t), site, bytes);
}
void apiYield(LoomEmuThread* t) { fiberOf(t)->sched->yield(fiberOf(t)); }
void apiTrap(LoomEmuThread* t, const char* message) {
  fiberOf(t)->sched->fail(fiberOf(t), [&] { return std::string("kernel trapped: ") + message; });
}

const LoomEmuApi kApi = {LOOM_EMU_ABI_VERSION,
                         apiSyncThreads,
                         apiWarpCollective,
                         apiGridSync,
                         apiStaticShared,
                         apiYield,
                         apiTrap};

void Scheduler::fiberMain(void* fiber) {
  auto* f = static_cast<Fiber*>(fiber);
  Scheduler* s = f->sched;
  asanFinishSwitch(nullptr, &s->mainStackBottom_, &s->mainStackSize_);
  bool threw = true;
  try {
    s->launch_.entry(s->launch_.args);
    threw = false;
  } catch (const std::exception& e) {
    s->recordError(std::string("kernel threw an exception: ") + e.what());
  } catch (...) {
    s->recordError("kernel threw an exception");
  }
  if (threw) s->abandon(f);
  f->state = FiberState::Done;
  s->switchToScheduler(f, /*finished=*/true);
  std::abort();  // a finished fiber is never resumed
}

void Scheduler::abandon(Fiber* f) {
  f->state = FiberState::Aborted;
  switchToScheduler(f, /*finished=*/true);  // never resumed: ASan may free its fake stack
  std::abort();  // an aborted fiber is never resumed
}

void Scheduler::run(std::vector<Block*>& blocks, std::vector<Fiber>& fibers,
                    const StackPool& stacks) {
  size_t next = 0;
  for (Block* b : blocks) {
    const unsigned n = b->size;
    b->warps.assign((n + 31) / 32, Warp{});
    for (unsigned w = 0; w < b->warps.size(); ++w) {
      const unsigned live = std::min(32u, n - w * 32);
      b->warps[w].existing = live == 32 ? 0xffffffffu : ((1u << live) - 1);
    }
    for (unsigned i = 0; i < n; ++i, ++next) {
      Fiber& f = fibers[next];
      f = Fiber{};
      f.sched = this;
      f.block = b;
      f.warp = i / 32;
      const Dim3& bd = launch_.block;
      f.t.thread_idx = {i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
      f.t.block_idx = b->idx;
      f.t.block_dim = {bd.x, bd.y, bd.z};
      f.t.grid_dim = {launch_.grid.x, launch_.grid.y, launch_.grid.z};
      f.t.dynamic_smem = b->dynamicSmem.get();
      f.t.lane = i % 32;
      f.t.api = &kApi;
      f.t.impl = &f;
      f.stack = stacks.stack(next);
      f.stackSize = stacks.stackSize();
      asanUnpoison(f.stack, f.stackSize);
      f.ctx.start(f.stack, f.stackSize, &Scheduler::fiberMain, &f);
      f.tsanFiber = tsanCreateFiber();
      ready_.push_back(&f);
    }
  }
  gridThreads_ = next;
  // Fibers end with the launch, finished or not (an error abandons the rest).
  struct DestroyTsanFibers {
    std::vector<Fiber>& fibers;
    size_t count;
    ~DestroyTsanFibers() {
      for (size_t i = 0; i < count; ++i) tsanDestroyFiber(fibers[i].tsanFiber);
    }
  } destroy_tsan_fibers{fibers, next};
  size_t done = 0;
  while (!ready_.empty()) {
    Fiber* f = ready_.front();
    ready_.pop_front();
    loom_emu_running_thread = &f->t;
    switchToFiber(f);
    loom_emu_running_thread = nullptr;
    if (!error_.empty()) break;
    if (f->state == FiberState::Done) {
      ++done;
      onExit(f);
      if (!error_.empty()) break;
    } else if (f->state == FiberState::Ready) {
      ready_.push_back(f);  // it yielded
    }
  }
  if (error_.empty() && done != gridThreads_) error_ = deadlockReport(blocks);
  LOOM_CHECK(error_.empty(), "host backend: kernel ", launch_.kernelName, ": ", error_);
}

void Scheduler::onExit(Fiber* f) {
  yieldsWithoutProgress_ = 0;
  Block& b = *f->block;
  ++b.exited;
  ++gridExited_;
  if (!b.firstExited) b.firstExited = f;
  if (!firstGridExit_) firstGridExit_ = f;
  Warp& w = b.warps[f->warp];
  const unsigned bit = 1u << f->t.lane;
  w.exited |= bit;
  if (b.arrived > 0) {
    error_ = "divergent __syncthreads: " + where(f) + " exited while " + std::to_string(b.arrived) +
             " threads wait at a barrier";
  } else if (w.active && (w.mask & bit)) {
    error_ = "incomplete mask " + hex(w.mask) + " in " + warpOpName(w.op) + ": lane " +
             std::to_string(f->t.lane) + " (" + where(f) + ") exited while lanes " +
             laneList(w.arrived) + " of warp " + std::to_string(f->warp) + " wait for it";
  } else if (!gridWaiters_.empty()) {
    error_ = "divergent loom_grid_sync: " + where(f) + " exited while " +
             std::to_string(gridWaiters_.size()) + " threads wait at a grid barrier";
  }
}

int Scheduler::syncThreads(Fiber* f, int op, int predicate) {
  Block& b = *f->block;
  if (b.exited > 0) {
    fail(f, [&] {
      return "divergent __syncthreads: " + where(b.firstExited) + " exited while " +
             std::to_string(b.arrived + 1) + " threads wait at a barrier";
    });
  }
  if (b.arrived == 0) {
    b.barrierOp = op;
    b.accum = op == LOOM_EMU_BARRIER_AND ? 1 : 0;
  }
  if (op == LOOM_EMU_BARRIER_COUNT) b.accum += predicate;
  if (op == LOOM_EMU_BARRIER_AND) b.accum = b.accum && predicate;
  if (op == LOOM_EMU_BARRIER_OR) b.accum = b.accum || predicate;
  if (++b.arrived == b.size) {
    yieldsWithoutProgress_ = 0;
    const int result = b.accum;
    for (Fiber* w : b.barrierWaiters) {
      w->barrierResult = result;
      release(w);
    }
    b.barrierWaiters.clear();
    b.arrived = 0;
    return result;
  }
  f->state = FiberState::AtBarrier;
  b.barrierWaiters.push_back(f);
  switchToScheduler(f);
  return f->barrierResult;
}

uint64_t Scheduler::warpCollective(Fiber* f, int op, unsigned mask, uint64_t value, int param,
                                   int width) {
  Block& b = *f->block;
  Warp& w = b.warps[f->warp];
  const unsigned lane = f->t.lane;
  const unsigned bit = 1u << lane;
  auto warpName = [&] { return "warp " + std::to_string(f->warp) + " of block " + str(b.idx); };
  // Lanes past the end of a partial warp do not exist; a full mask still names only real lanes.
  const unsigned eff = mask & w.existing;
  if (!(eff & bit)) {
    fail(f, [&] {
      return std::string(warpOpName(op)) + " called by lane " + std::to_string(lane) + " of " +
             warpName() + " with mask " + hex(mask) + ", which does not include the lane";
    });
  }
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    fail(f, [&] {
      return std::string(warpOpName(op)) + " in " + warpName() + ": width " +
             std::to_string(width) + " is not a power of two in [1, 32]";
    });
  }
  if (eff & w.exited) {
    fail(f, [&] {
      return "incomplete mask " + hex(mask) + " in " + warpOpName(op) + ": lanes " +
             laneList(eff & w.exited) + " of " + warpName() + " have exited";
    });
  }
  if (!w.active) {
    w.active = true;
    w.op = op;
    w.mask = eff;
    w.arrived = 0;
  } else if (w.op != op || w.mask != eff) {
    fail(f, [&] {
      return "mismatched warp collectives in " + warpName() + ": lanes " + laneList(w.arrived) +
             " wait in " + warpOpName(w.op) + " with mask " + hex(w.mask) + ", lane " +
             std::to_string(lane) + " calls " + warpOpName(op) + " with mask " + hex(eff);
    });
  }
  w.values[lane] = value;
  w.params[lane] = param;
  w.widths[lane] = width;
  w.arrived |= bit;
  if (w.arrived != w.mask) {
    f->state = FiberState::AtWarp;
    w.waiters[lane] = f;
    switchToScheduler(f);
    return w.results[lane];
  }
  // Last arrival: compute every lane's result, then wake the others.
  yieldsWithoutProgress_ = 0;
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if ((w.mask & (1u << l)) && w.values[l] != 0) ballot |= 1u << l;
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(w.mask & (1u << l))) continue;
    const int wd = w.widths[l];
    const int base = static_cast<int>(l) & ~(wd - 1);
    const int self = static_cast<int>(l);
    int src = self;
    switch (w.op) {
      case LOOM_EMU_SHFL_IDX: src = base + (w.params[l] & (wd - 1)); break;
      case LOOM_EMU_SHFL_UP: src = self - w.params[l] < base ? self : self - w.params[l]; break;
      case LOOM_EMU_SHFL_DOWN:
        src = self + w.params[l] >= base + wd ? self : self + w.params[l];
        break;
      case LOOM_EMU_SHFL_XOR:
        src = (self ^ w.params[l]) >= base + wd ? self : self ^ w.params[l];
        break;
      default: break;
    }
    // Reading a lane outside the mask is undefined in CUDA; the emulator returns the own value.
    if (src < 0 || src > 31 || !(w.mask & (1u << src))) src = self;
    switch (w.op) {
      case LOOM_EMU_BALLOT: w.results[l] = ballot; break;
      case LOOM_EMU_ANY: w.results[l] = ballot != 0; break;
      case LOOM_EMU_ALL: w.results[l] = ballot == w.mask; break;
      case LOOM_EMU_SYNCWARP: w.results[l] = 0; break;
      default: w.results[l] = w.values[src]; break;
    }
  }
  w.active = false;
  for (unsigned l = 0; l < 32; ++l) {
    if ((w.mask & (1u << l)) && l != lane) {
      release(w.waiters[l]);
      w.waiters[l] = nullptr;
    }
  }
  return w.results[lane];
}

void Scheduler::gridSync(Fiber* f) {
  if (!launch_.options.cooperative) {
    fail(f, [&] {
      return "loom_grid_sync() in " + where(f) +
             " needs a cooperative launch (HostLaunchOptions::cooperative = true)";
    });
  }
  if (gridExited_ > 0) {
    fail(f, [&] {
      return "divergent loom_grid_sync: " + where(firstGridExit_) + " exited while " +
             std::to_string(gridWaiters_.size() + 1) + " threads wait at a grid barrier";
    });
  }
  if (gridWaiters_.size() + 1 == gridThreads_) {
    yieldsWithoutProgress_ = 0;
    for (Fiber* w : gridWaiters_) release(w);
    gridWaiters_.clear();
    return;
  }
  f->state = FiberState::AtGridSync;
  gridWaiters_.push_back(f);
  switchToScheduler(f);
}

void* Scheduler::staticShared(Fiber* f, unsigned site, size_t bytes) {
  auto& slot = f->block->staticShared[site];
  if (!slot) slot = poisonedBuffer(bytes);
  return slot.get();
}

void Scheduler::yield(Fiber* f) {
  if (++yieldsWithoutProgress_ > kMaxYieldsWithoutProgress) {
    fail(f, [&] {
      return "no progress: " + where(f) + " keeps spinning while no other thread gets anywhere" +
             (launch_.options.cooperative
                  ? std::string()
                  : std::string("; a kernel that waits for other blocks needs a cooperative "
                                "launch (HostLaunchOptions::cooperative)"));
    });
  }
  // Alone in the queue there is nobody to switch to; skipping the switch keeps spinning cheap.
  if (!ready_.empty()) switchToScheduler(f);
}

std::string Scheduler::deadlockReport(const std::vector<Block*>& blocks) const {
  std::ostringstream os;
  os << "deadlock: no thread can run";
  for (const Block* b : blocks) {
    if (b->exited == b->size) continue;
    os << "; in block " << str(b->idx) << ":";
    for (size_t wi = 0; wi < b->warps.size(); ++wi) {
      const Warp& w = b->warps[wi];
      if (!w.active) continue;
      os << " incomplete mask " << hex(w.mask) << " in " << warpOpName(w.op) << " of warp " << wi
         << ": lanes " << laneList(w.mask & ~w.arrived) << " never arrived;";
    }
    if (b->arrived > 0) os << " " << b->arrived << " threads wait at __syncthreads";
  }
  if (!gridWaiters_.empty()) os << " " << gridWaiters_.size() << " threads wait at loom_grid_sync";
  return os.str();
}

}  // namespace

ptrdiff_t runningThreadOffset() {
  return reinterpret_cast<char*>(&loom_emu_running_thread) -
         static_cast<char*>(__builtin_thread_pointer());
}

const char* fiberSwitchName() { return FiberContext::kName; }

void runGrid(const GridLaunch& launch) {
  const uint64_t blockThreads = launch.block.volume();
  const uint64_t blocks = launch.grid.volume();
  LOOM_CHECK(blockThreads >= 1 && blockThreads <= 1024, "host backend: kernel ", launch.kernelName,
             ": block ", launch.block.x, "x", launch.block.y, "x", launch.block.z, " has ",
             blockThreads, " threads, expected 1 to 1024");
  LOOM_CHECK(launch.block.z <= 64, "host backend: kernel ", launch.kernelName, ": block.z ",
             launch.block.z, " exceeds 64");
  LOOM_CHECK(blocks >= 1, "host backend: kernel ", launch.kernelName, ": empty grid ",
             launch.grid.x, "x", launch.grid.y, "x", launch.grid.z);
  LOOM_CHECK(launch.grid.y <= 65535 && launch.grid.z <= 65535, "host backend: kernel ",
             launch.kernelName, ": grid.y and grid.z must be at most 65535");

  auto makeBlock = [&](uint64_t linear) {
    auto b = std::make_unique<Block>();
    b->idx = {static_cast<unsigned>(linear % launch.grid.x),
              static_cast<unsigned>((linear / launch.grid.x) % launch.grid.y),
              static_cast<unsigned>(linear / (uint64_t{launch.grid.x} * launch.grid.y))};
    b->size = static_cast<unsigned>(blockThreads);
    b->dynamicSmem = poisonedBuffer(launch.dynamicSharedBytes);
    return b;
  };

  if (launch.options.cooperative) {
    const uint64_t total = blockThreads * blocks;
    LOOM_CHECK(total <= uint64_t(kMaxCooperativeThreads), "host backend: kernel ", launch.kernelName,
               ": a cooperative launch of ", total, " threads exceeds the emulator's limit of ",
               kMaxCooperativeThreads);
    StackPool stacks(total, launch.options.stackBytes);
    std::vector<std::unique_ptr<Block>> owned;
    std::vector<Block*> all;
    for (uint64_t i = 0; i < blocks; ++i) {
      owned.push_back(makeBlock(i));
      all.push_back(owned.back().get());
    }
    std::vector<Fiber> fibers(total);
    Scheduler(launch).run(all, fibers, stacks);
    return;
  }
  // One block at a time, the last first: CUDA runs blocks in no fixed order, and a kernel that
  // reads in one block what a lower block writes (a race on the GPU) then reads unwritten data
  // here too instead of passing by luck. The stacks and fibers are reused by every block, and by
  // the next launch on this thread: mapping the stacks, guarding each and faulting their pages in
  // again was most of a small launch's time (2.4 ms for a 64-thread kernel). Scheduler::run
  // resets every fiber it starts.
  struct Reused {
    std::unique_ptr<StackPool> stacks;
    std::vector<Fiber> fibers;
  };
  thread_local Reused reused;
  if (reused.stacks == nullptr || !reused.stacks->fits(blockThreads, launch.options.stackBytes)) {
    reused.stacks.reset();
    reused.stacks = std::make_unique<StackPool>(blockThreads, launch.options.stackBytes);
  }
  if (reused.fibers.size() < blockThreads) reused.fibers.resize(blockThreads);
  for (uint64_t i = blocks; i-- > 0;) {
    auto block = makeBlock(i);
    std::vector<Block*> one{block.get()};
    Scheduler(launch).run(one, reused.fibers, *reused.stacks);
  }
}

}  // namespace loom::backend::host
