// SPDX-License-Identifier: Apache-2.0
// HostBlockCache: size-classed free lists of large host blocks (see the header for why).
#include "loom/tensor/host_block_cache.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "loom/support/error.h"
#include "loom/tensor/tensor.h"

namespace loom {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kClassBytes = size_t(2) << 20;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheEnabled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCacheEnabled = false;
#else
constexpr bool kCacheEnabled = true;
#endif
#else
constexpr bool kCacheEnabled = true;
#endif

void* allocateAligned(size_t rounded, size_t nbytes) {
  void* p = rounded == 0 ? nullptr : std::aligned_alloc(kAlignment, rounded);
  LOOM_CHECK(rounded == 0 || p != nullptr, "out of host memory allocating ", nbytes, " bytes");
  return p;
}

}  // namespace

struct HostBlockCache::State {
  explicit State(Options o) : options(o) {}
  ~State() { releaseAll(); }

  void releaseAll() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [size, blocks] : free) {
      for (void* p : blocks) std::free(p);
    }
    free.clear();
    cached = 0;
  }

  // A block of class `size` is free again: keep it while there is room, else release it.
  void giveBack(void* p, size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (cached + size <= options.capacityBytes) {
        free[size].push_back(p);
        cached += size;
        return;
      }
    }
    std::free(p);
  }

  const Options options;
  mutable std::mutex mutex;
  std::map<size_t, std::vector<void*>> free;  // class size -> free blocks
  size_t cached = 0;
  int64_t hits = 0;
  int64_t misses = 0;
};

HostBlockCache::HostBlockCache() : HostBlockCache(Options{}) {}
HostBlockCache::HostBlockCache(Options options) : state_(std::make_shared<State>(options)) {}
HostBlockCache::~HostBlockCache() = default;

std::shared_ptr<Storage> HostBlockCache::allocate(size_t nbytes) {
  if (!kCacheEnabled || nbytes < state_->options.minBlockBytes) {
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = allocateAligned(rounded, nbytes);
    return std::make_shared<Storage>(p, nbytes, Device::cpu(), [](void* q) { std::free(q); });
  }
  const size_t size = (nbytes + kClassBytes - 1) / kClassBytes * kClassBytes;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->free.find(size);
    if (it != state_->free.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) state_->free.erase(it);
      state_->cached -= size;
      ++state_->hits;
    } else {
      ++state_->misses;
    }
  }
  if (p == nullptr) {
    p = std::aligned_alloc(kAlignment, size);
    if (p == nullptr) {  // memory held by the cache may be what is missing
      release();
      p = allocateAligned(size, nbytes);
    }
  }
  std::shared_ptr<State> state = state_;
  return std::make_shared<Storage>(p, nbytes, Device::cpu(),
                                   [state, size](void* q) { state->giveBack(q, size); });
}

void HostBlockCache::release() { state_->releaseAll(); }

HostBlockCache::Stats HostBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return Stats{state_->hits, state_->misses, state_->cached};
}

bool HostBlockCache::cachesBlocks() { return kCacheEnabled; }

HostBlockCache& HostBlockCache::process() {
  // Never destroyed: storages freed during static destruction still find it.
  static HostBlockCache* cache = new HostBlockCache();
  return *cache;
}

}  // namespace loom
