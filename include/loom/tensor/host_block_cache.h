// SPDX-License-Identifier: Apache-2.0
// A cache of large host memory blocks, so that a run that allocates the same large outputs again
// and again (a fusion's outputs, a collective's staging buffers) reuses memory whose pages are
// already mapped instead of paying the kernel's page faults and zeroing on every allocation.
//
// glibc serves blocks of 32 MiB and more with mmap and returns them with munmap on free: every
// such allocation starts with no page mapped, and touching N bytes costs N / 4096 page faults
// plus the kernel zeroing the pages (about as long as writing the data once more). The cache
// keeps freed blocks of at least `minBlockBytes`, by size class (rounded up to 2 MiB), up to
// `capacityBytes` in all, and hands them out again for an allocation of the same class. Blocks
// smaller than `minBlockBytes` go to the C allocator, which keeps them mapped itself.
//
// Storage::allocateHost uses the process's cache (`HostBlockCache::process()`); under
// AddressSanitizer it caches nothing, so a use after free is still caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace loom {

class Storage;

class HostBlockCache {
 public:
  struct Options {
    size_t minBlockBytes = size_t(4) << 20;   ///< smaller blocks are not cached
    size_t capacityBytes = size_t(2) << 30;   ///< free bytes kept at most; more are released
  };
  struct Stats {
    int64_t hits = 0;          ///< allocations served from the cache
    int64_t misses = 0;        ///< cacheable allocations that had to allocate
    size_t cachedBytes = 0;    ///< free bytes held now
  };

  HostBlockCache();
  explicit HostBlockCache(Options options);
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  /// `nbytes` of uninitialized host memory, 64-byte aligned, returned to this cache (not to the
  /// C allocator) when the last owner lets go; the storage keeps the cache's state alive, so it
  /// may outlive the cache object. Throws UserError when the memory is not there.
  std::shared_ptr<Storage> allocate(size_t nbytes);

  /// Releases every cached free block to the C allocator.
  void release();

  Stats stats() const;

  /// The cache Storage::allocateHost draws from.
  static HostBlockCache& process();

  /// False under AddressSanitizer: every allocation then goes to the C allocator.
  static bool cachesBlocks();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace loom
