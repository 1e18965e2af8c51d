// SPDX-License-Identifier: Apache-2.0
// SHA-256 against the FIPS 180-4 example vectors, and incremental updates.
#include "loom/support/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace loom {
namespace {

// The digests of the standard's examples (one block, two blocks, a million 'a's) and of "".
TEST(Sha256, MatchesTheStandardsVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Feeding the bytes in pieces of any size gives the digest of the whole, and digest() does not
// disturb further updates.
TEST(Sha256, IncrementalUpdatesMatchOneShot) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += char('a' + i % 26);
  for (size_t piece : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 200u}) {
    Sha256 h;
    for (size_t at = 0; at < text.size(); at += piece) {
      h.update(std::string_view(text).substr(at, piece));
      (void)h.digest();
    }
    EXPECT_EQ(h.hexDigest(), sha256Hex(text)) << "pieces of " << piece;
  }
  EXPECT_NE(Sha256().str("ab").str("c").hexDigest(), Sha256().str("a").str("bc").hexDigest());
}

}  // namespace
}  // namespace loom
