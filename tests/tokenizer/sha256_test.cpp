#include "tokenizer/sha256.h"

#include <gtest/gtest.h>

namespace gpt2lab {
namespace {

TEST(TokenizerSha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 h;  // streaming in odd pieces gives the same as one call
  const std::string a(1000, 'a');
  for (size_t i = 0; i < a.size(); i += 7) h.update(std::string_view(a).substr(i, 7));
  EXPECT_EQ(h.hex_digest(), sha256_hex(a));
}

}  // namespace
}  // namespace gpt2lab
