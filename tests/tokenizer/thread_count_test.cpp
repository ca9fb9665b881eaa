// The library's one thread-count rule (gpt2lab/core/thread_count.h), which
// the Python module's encode_batch reaches without the CLI's --threads
// check: 0 is all cores, a negative count or more than 4096 is refused
// (OpenMP crashed the process asked for 100000).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/core/thread_count.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {
namespace {

TEST(ThreadCount, RangeIsTheCliOne) {
  EXPECT_NO_THROW(check_thread_count(0, "threads"));
  EXPECT_NO_THROW(check_thread_count(kMaxThreads, "threads"));
  EXPECT_EQ(kMaxThreads, 4096);
  for (long long n : {-1LL, static_cast<long long>(kMaxThreads) + 1, 100000LL}) {
    try {
      check_thread_count(n, "threads");
      ADD_FAILURE() << n << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("threads = " + std::to_string(n) + " is out of range"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ThreadCount, EncodeBatchRefusesWhatOpenMpCannotStart) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back(Tokenizer::kEndOfText);
  const Tokenizer tok = Tokenizer::from_vocab(std::move(tokens), {}, "bytes");
  const std::vector<std::string> texts = {"ab", "c"};
  EXPECT_THROW(tok.encode_batch(texts, false, 100000), Error);
  EXPECT_THROW(tok.encode_batch(texts, false, -1), Error);
  EXPECT_THROW(tok.encode_parallel("abc", false, 100000), Error);
  EXPECT_EQ(tok.encode_batch(texts, false, 0), (std::vector<std::vector<int>>{{97, 98}, {99}}));
}

}  // namespace
}  // namespace gpt2lab
