#include "tokenizer/trainer.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pretokenize.h"

namespace gpt2lab {
namespace {

using Merges = std::vector<std::pair<std::string, std::string>>;

// The textbook algorithm, slow and obviously right: recount every pair of
// every piece occurrence before each merge.
Merges reference_bpe(const std::vector<std::string>& docs, int n_merges) {
  std::map<std::string, int64_t> counts;
  for (const auto& d : docs) tokenizer::for_each_piece(d, [&](std::string_view p) { ++counts[std::string(p)]; });
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (const auto& [w, c] : counts) {
    std::vector<std::string> syms;
    for (char ch : w) syms.emplace_back(1, ch);
    words.push_back({syms, c});
  }
  Merges merges;
  for (int m = 0; m < n_merges; ++m) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [syms, c] : words)
      for (size_t i = 0; i + 1 < syms.size(); ++i) pairs[{syms[i], syms[i + 1]}] += c;
    if (pairs.empty()) break;
    // Highest count; std::map order gives the smallest (left, right) on ties.
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    merges.push_back(best->first);
    for (auto& [syms, c] : words) {
      std::vector<std::string> next;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == best->first.first && syms[i + 1] == best->first.second) {
          next.push_back(syms[i] + syms[i + 1]);
          ++i;
        } else {
          next.push_back(syms[i]);
        }
      }
      syms = next;
    }
  }
  return merges;
}

TEST(TokenizerBpeTrain, HandCheckableCase) {
  // Pieces "ab", " ab", " ab", " abc": (a,b) occurs 4 times, then (" ",ab)
  // 3 times, then (" ab",c) once.
  const std::vector<std::string> docs = {"ab ab ab abc"};
  const BpeVocab v = train_bpe(docs, 256 + 3 + 1, 1);
  EXPECT_EQ(v.merges, (Merges{{"a", "b"}, {" ", "ab"}, {" ab", "c"}}));
  ASSERT_EQ(v.tokens.size(), 260u);
  EXPECT_EQ(v.tokens[256], "ab");
  EXPECT_EQ(v.tokens[257], " ab");
  EXPECT_EQ(v.tokens[258], " abc");
  EXPECT_EQ(v.tokens[259], "<|endoftext|>");
  EXPECT_EQ(v.tokens[0], "!");  // bytes in GPT-2's id order
}

TEST(TokenizerBpeTrain, TiesGoToTheSmallestBytes) {
  // Every pair of "xy zw" occurs once: (" ",z) sorts first, then (" z",w),
  // then (x,y).
  const BpeVocab v = train_bpe(std::vector<std::string>{"xy zw"}, 256 + 3 + 1, 1);
  EXPECT_EQ(v.merges, (Merges{{" ", "z"}, {" z", "w"}, {"x", "y"}}));
}

std::vector<std::string> random_docs(unsigned seed, int n) {
  std::mt19937 rng(seed);
  const char* syllables[] = {"ka", "ro", "mi", "ten",      "s", " ",   "  ", "\n",
                             "'s", "1",  "9",  "\xC3\xA9", ".", "the", "an"};
  std::vector<std::string> docs(n);
  for (auto& d : docs)
    for (int i = 0; i < 400; ++i) d += syllables[rng() % std::size(syllables)];
  return docs;
}

TEST(TokenizerBpeTrain, AgreesWithTheTextbookAlgorithm) {
  const auto docs = random_docs(5, 20);
  const BpeVocab v = train_bpe(docs, 256 + 150 + 1, 2);
  EXPECT_EQ(v.merges, reference_bpe(docs, 150));
}

TEST(TokenizerBpeTrain, DeterministicAcrossRunsAndThreads) {
  const auto docs = random_docs(9, 40);
  const BpeVocab a = train_bpe(docs, 600, 1), b = train_bpe(docs, 600, 2), c = train_bpe(docs, 600, 4);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.tokens, c.tokens);
}

TEST(TokenizerBpeTrain, SavedVocabularyLoadsAndRoundTrips) {
  const auto docs = random_docs(13, 10);
  const BpeVocab v = train_bpe(docs, 500, 1);
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab_bpe_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  save_bpe(v, dir);
  const Tokenizer t = Tokenizer::load(dir);
  EXPECT_EQ(t.vocab_size(), 500);
  EXPECT_EQ(t.eot_id(), 499);
  for (const auto& d : docs) {
    const auto ids = t.encode(d, false);
    EXPECT_EQ(t.decode(ids), d);
    EXPECT_LT(ids.size(), d.size() / 2);  // it did learn something
  }
  EXPECT_EQ(t.encode("<|endoftext|>", true), std::vector<int>{499});
  // Training on a corpus and encoding it gives the merged tokens: a piece
  // seen in training is a single token once its merges are all in.
  EXPECT_EQ(t.encode("ka", false).size(), 1u);
  fs::remove_all(dir);
}

TEST(TokenizerBpeTrain, EncoderJsonListsEveryTokenInIdOrder) {
  BpeVocab v;
  for (int b = 0; b < 256; ++b) v.tokens.emplace_back(1, static_cast<char>(b));
  v.tokens.emplace_back("\"\\");  // a merge of the two bytes JSON escapes
  v.merges.emplace_back("\"", "\\");
  v.tokens.emplace_back(Tokenizer::kEndOfText);
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab_bpe_order_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  save_bpe(v, dir);
  // ordered_json keeps the file's order: every id in turn, under the spelling
  // GPT-2's byte-to-unicode table gives its bytes.
  const auto encoder = nlohmann::ordered_json::parse(read_file(dir / "encoder.json", SIZE_MAX));
  ASSERT_EQ(encoder.size(), v.tokens.size());
  size_t id = 0;
  for (const auto& [spelling, value] : encoder.items()) {
    const std::string& t = v.tokens[id];
    EXPECT_EQ(spelling, t == Tokenizer::kEndOfText ? t : tokenizer::bytes_to_spelling(t)) << "id " << id;
    EXPECT_EQ(value.get<size_t>(), id);
    ++id;
  }
  EXPECT_EQ(Tokenizer::load(dir).encode("\"\\", false), std::vector<int>{256});
  fs::remove_all(dir);
}

TEST(TokenizerBpeTrain, SaveRefusesATokenListedTwiceAndWritesNothing) {
  BpeVocab v;
  for (int b = 0; b < 256; ++b) v.tokens.emplace_back(1, static_cast<char>(b));
  v.tokens.emplace_back("ab");
  v.merges.emplace_back("a", "b");
  v.tokens.emplace_back("ab");
  v.tokens.emplace_back(Tokenizer::kEndOfText);
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab_bpe_twice_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  try {
    save_bpe(v, dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 257 (\"ab\") appears twice"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir));
}

TEST(TokenizerBpeTrain, RejectsImpossibleVocabularySizes) {
  EXPECT_THROW(train_bpe(std::vector<std::string>{"abc"}, 256, 1), Error);
  EXPECT_THROW(train_bpe(std::vector<std::string>{"abc"}, 70000, 1), Error);
  try {
    train_bpe(std::vector<std::string>{"abc"}, 300, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("supports only 259 tokens"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpt2lab
