// SPDX-License-Identifier: Apache-2.0
// HostBlockCache: large freed blocks come back for the same size class, small ones and blocks
// beyond the capacity go to the C allocator, and storages outlive the cache object.
#include "loom/tensor/host_block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "loom/tensor/tensor.h"

namespace loom {
namespace {

const bool kCaches = HostBlockCache::cachesBlocks();

constexpr size_t kMiB = size_t(1) << 20;

HostBlockCache::Options smallOptions() {
  HostBlockCache::Options o;
  o.minBlockBytes = 4 * kMiB;
  o.capacityBytes = 16 * kMiB;
  return o;
}

// A freed block of 5 MiB (class 6 MiB) serves the next allocation of 5.5 MiB, written to its
// last byte; under AddressSanitizer nothing is cached (a use after free stays visible).
TEST(HostBlockCache, ReusesAFreedBlockOfTheSameClass) {
  HostBlockCache cache(smallOptions());
  void* first = nullptr;
  {
    auto s = cache.allocate(5 * kMiB);
    ASSERT_NE(s->data(), nullptr);
    EXPECT_EQ(s->nbytes(), 5 * kMiB);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 64, 0u);
    std::memset(s->data(), 1, s->nbytes());
    first = s->data();
  }
  EXPECT_EQ(cache.stats().cachedBytes, kCaches ? 6 * kMiB : 0);
  auto again = cache.allocate(5 * kMiB + kMiB / 2);
  std::memset(again->data(), 2, again->nbytes());
  if (kCaches) {
    EXPECT_EQ(again->data(), first);
    EXPECT_EQ(cache.stats().hits, 1);
    EXPECT_EQ(cache.stats().misses, 1);
    EXPECT_EQ(cache.stats().cachedBytes, 0u);
  } else {
    EXPECT_EQ(cache.stats().hits, 0);
  }
}

// Another class does not take the block; small blocks are never cached.
TEST(HostBlockCache, OtherClassesAndSmallBlocksMiss) {
  HostBlockCache cache(smallOptions());
  { auto s = cache.allocate(5 * kMiB); }
  auto other = cache.allocate(9 * kMiB);
  EXPECT_EQ(cache.stats().hits, 0);
  { auto small = cache.allocate(kMiB); }
  EXPECT_EQ(cache.stats().cachedBytes, kCaches ? 6 * kMiB : 0);
  EXPECT_EQ(cache.stats().misses, kCaches ? 2 : 0);
}

// Free blocks beyond the capacity are released; release() empties the cache.
TEST(HostBlockCache, KeepsAtMostTheCapacity) {
  HostBlockCache cache(smallOptions());
  {
    auto a = cache.allocate(6 * kMiB);
    auto b = cache.allocate(6 * kMiB);
    auto c = cache.allocate(6 * kMiB);
  }
  EXPECT_EQ(cache.stats().cachedBytes, kCaches ? 12 * kMiB : 0);
  cache.release();
  EXPECT_EQ(cache.stats().cachedBytes, 0u);
}

// A storage may outlive the cache that made it.
TEST(HostBlockCache, StorageOutlivesTheCache) {
  std::shared_ptr<Storage> s;
  {
    HostBlockCache cache(smallOptions());
    s = cache.allocate(8 * kMiB);
  }
  std::memset(s->data(), 3, s->nbytes());
  s.reset();
}

// Storage::allocateHost draws large blocks from the process's cache.
TEST(HostBlockCache, AllocateHostUsesTheProcessCache) {
  HostBlockCache& cache = HostBlockCache::process();
  const HostBlockCache::Stats before = cache.stats();
  { auto s = Storage::allocateHost(40 * kMiB); }
  auto again = Storage::allocateHost(40 * kMiB);
  std::memset(again->data(), 4, again->nbytes());
  EXPECT_EQ(cache.stats().hits - before.hits, kCaches ? 1 : 0);
}

}  // namespace
}  // namespace loom
