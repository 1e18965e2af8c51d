// SPDX-License-Identifier: Apache-2.0
// The little binary form of Loom's plan cache files: 64-bit little-endian integers and
// length-prefixed strings, read back by a reader that fails (ok() false) instead of overrunning.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

inline void putInt(std::string& out, int64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char(uint64_t(v) >> (8 * i) & 0xff));
}

inline void putString(std::string& out, std::string_view s) {
  putInt(out, int64_t(s.size()));
  out.append(s);
}

inline void putInts(std::string& out, const std::vector<int64_t>& v) {
  putInt(out, int64_t(v.size()));
  for (int64_t x : v) putInt(out, x);
}

/// Reads what the put* functions wrote. After a read past the end (or a length larger than what
/// is left) every later read returns zero values and ok() is false.
class ByteReader {
 public:
  explicit ByteReader(std::string_view& in) : in_(in) {}
  bool ok() const { return ok_; }
  int64_t getInt() {
    if (!ok_ || in_.size() < 8) return fail();
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(in_[size_t(i)])) << (8 * i);
    in_.remove_prefix(8);
    return int64_t(v);
  }
  /// A count of items of at least `minBytes` bytes each, refused when the rest cannot hold it.
  int64_t getCount(int64_t minBytes = 8) {
    const int64_t n = getInt();
    if (n < 0 || (minBytes > 0 && uint64_t(n) > in_.size() / uint64_t(minBytes))) return fail();
    return n;
  }
  std::string getString() {
    const int64_t n = getCount(1);
    if (!ok_) return {};
    std::string s(in_.substr(0, size_t(n)));
    in_.remove_prefix(size_t(n));
    return s;
  }
  std::vector<int64_t> getInts() {
    std::vector<int64_t> v(static_cast<size_t>(getCount()));
    for (int64_t& x : v) x = getInt();
    return v;
  }
  bool getBool() { return getInt() != 0; }

 private:
  int64_t fail() {
    ok_ = false;
    return 0;
  }
  std::string_view& in_;
  bool ok_ = true;
};

}  // namespace loom
