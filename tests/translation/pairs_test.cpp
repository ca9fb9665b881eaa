// Catalog entries -> translation pairs: every cleaning rule counted as the
// header of translation/pairs.h says, format specifiers as documented, and
// the split by source string (no source in two splits, the same result for
// any input order, one reference per valid/test source).
#include "translation/pairs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "test_util.h"
#include "tokenizer/gpt2_files.h"

namespace gpt2lab {
namespace {

using Pairs = std::vector<TranslationPair>;

// One entry per rule, in the header's order.
constexpr const char* kPo = R"po(msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\n"

#~ msgid "Gone"
#~ msgstr "Parti"

#, fuzzy
msgid "Guess"
msgstr "Devinette"

msgid "Untranslated"
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

msgid "%d file was removed"
msgid_plural "%d files were removed"
msgstr[0] "%d fichier a été supprimé"
msgstr[1] "%d fichiers ont été supprimés"

msgid "One dog"
msgid_plural "Many dogs"
msgstr[0] "Un chien"
msgstr[1] ""

msgid "  Two\n\tlines  "
msgstr "Deux\nlignes"

msgid "Bad bytes"
msgstr "Mauvais \377"

msgid " \n "
msgstr "Vide"

msgctxt "button"
msgid "OK"
msgstr "OK"

msgctxt "menu"
msgid "Open"
msgstr "Ouvrir"
)po";

TEST(TranslationPairs, ExtractCountsEveryRule) {
  CleaningStats stats;
  const Pairs pairs = extract_pairs(parse_po(kPo, "fr.po"), "demo", stats);
  const Pairs expected = {
      {"%d file was removed", "%d fichier a été supprimé", "demo"},
      {"%d files were removed", "%d fichiers ont été supprimés", "demo"},
      {"One dog", "Un chien", "demo"},
      {"Two lines", "Deux lignes", "demo"},
      {"Open", "Ouvrir", "demo"},
  };
  EXPECT_EQ(pairs, expected);
  EXPECT_EQ(stats.entries, 12);
  EXPECT_EQ(stats.header, 1);
  EXPECT_EQ(stats.obsolete, 1);
  EXPECT_EQ(stats.fuzzy, 1);
  EXPECT_EQ(stats.untranslated, 2);
  EXPECT_EQ(stats.plural_pairs, 1);
  EXPECT_EQ(stats.whitespace_normalized, 2);  // "Two lines" and the blank one
  EXPECT_EQ(stats.not_utf8, 1);
  EXPECT_EQ(stats.empty, 1);
  EXPECT_EQ(stats.identical, 1);
  EXPECT_EQ(stats.extracted, 5);
  // The header's reconciliation holds.
  EXPECT_EQ(stats.extracted, stats.entries - stats.header - stats.obsolete - stats.fuzzy - stats.untranslated +
                                 stats.plural_pairs - stats.not_utf8 - stats.empty - stats.identical);
  // A second catalog adds to the same counters.
  extract_pairs(parse_po(kPo, "fr.po"), "again", stats);
  EXPECT_EQ(stats.entries, 24);
  EXPECT_EQ(stats.extracted, 10);
  const auto json = stats.to_json();
  EXPECT_EQ(json.begin().key(), "entries");
  EXPECT_EQ(json["identical"], 2);
  EXPECT_EQ(json.size(), 15u);
}

TEST(TranslationPairs, NormalizesAsciiWhitespaceOnly) {
  EXPECT_EQ(normalize_whitespace("  a \t\n b\r\n\v\fc  "), "a b c");
  EXPECT_EQ(normalize_whitespace(" \n\t "), "");
  EXPECT_EQ(normalize_whitespace("a\xC2\xA0 b"), "a\xC2\xA0 b");  // NO-BREAK SPACE is text
}

TEST(TranslationPairs, FormatSpecifiersAreTheDocumentedOnes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(format_specifiers("%s and %d and %5.2f and %lu and %-10s and %*d and %llx"),
            (V{"%s", "%d", "%5.2f", "%lu", "%-10s", "%*d", "%llx"}));
  EXPECT_EQ(format_specifiers("%1$s %2$d %'d %zu %m"), (V{"%1$s", "%2$d", "%'d", "%zu", "%m"}));
  EXPECT_EQ(format_specifiers("%(name)s and %(count)5d"), (V{"%(name)s", "%(count)5d"}));
  EXPECT_EQ(format_specifiers("{0} {name} {} {0.attr} {name[key]} {x!r} {count:>5}"),
            (V{"{0}", "{name}", "{}", "{0.attr}", "{name[key]}", "{x!r}", "{count:>5}"}));
  EXPECT_EQ(format_specifiers("${var} ${_x1}"), (V{"${var}", "${_x1}"}));
  // Not specifiers: literal %, prose percentages, escaped braces, $var, a
  // lone % at the end, braces around prose.
  for (const char* none :
       {"100%% done", "50% done", "100% sure", "{{literal}}", "$HOME", "100%", "{a b}", "${ x}", "%(bad key)s", "% d"})
    EXPECT_EQ(format_specifiers(none), V{}) << none;
  EXPECT_EQ(format_specifiers("%d%%"), V{"%d"});
}

// Each byte one token: a pair's token count is its byte count.
Tokenizer byte_tokenizer() {
  std::vector<std::string> tokens;
  tokens.reserve(257);
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back(Tokenizer::kEndOfText);
  return Tokenizer::from_vocab(std::move(tokens), {}, "bytes");
}

TEST(TranslationPairs, CleanRemovesDuplicatesAndLongPairsAndCountsFormats) {
  const Pairs input = {
      {"File", "Fichier", "zzz"},
      {"Save %s", "Enregistrer %s", "b"},
      {"File", "Fichier", "aaa"},
      {"File", "Dossier", "mmm"},
      {"A long source", "Court", "b"},  // 13 bytes, kept; the 16-byte target below
                                        // is not
      {"Short", "Une longue cible", "b"},
      {"File", "Fichier", "bbb"},
      {"Open {name}", "Ouvrir {name}", "c"},
  };
  CleaningStats stats;
  const Pairs out = clean_pairs(input, byte_tokenizer(), {.max_tokens = 14, .threads = 2}, stats);
  const Pairs expected = {
      {"A long source", "Court", "b"},       {"File", "Dossier", "mmm"},
      {"File", "Fichier", "aaa", 3},  // the smallest origin, standing for 3
      {"Open {name}", "Ouvrir {name}", "c"}, {"Save %s", "Enregistrer %s", "b"},
  };
  EXPECT_EQ(out, expected);
  EXPECT_EQ(stats.duplicates, 2);
  EXPECT_EQ(stats.too_long, 1);
  EXPECT_EQ(stats.with_format_specifiers, 2);
  EXPECT_EQ(stats.kept, 5);
  // Same pairs in another order: same result.
  Pairs shuffled = input;
  std::reverse(shuffled.begin(), shuffled.end());
  CleaningStats again;
  EXPECT_EQ(clean_pairs(shuffled, byte_tokenizer(), {.max_tokens = 14}, again), expected);
  test::expect_refused([&] { clean_pairs(input, byte_tokenizer(), {.max_tokens = 0}, again); },
                       {"at least 1", "got 0"});
}

TEST(TranslationPairs, LengthCapCountsGpt2Tokens) {
  GPT2LAB_REQUIRE_GPT2(gpt2);
  ASSERT_EQ(gpt2.encode("Hello world", false).size(), 2u);
  CleaningStats stats;
  const Pairs out =
      clean_pairs({{"Hello world", "Hi", "x"}, {"Hello world again", "Hi", "x"}}, gpt2, {.max_tokens = 2}, stats);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].source, "Hello world");
  EXPECT_EQ(stats.too_long, 1);
}

// 60 sources; source i has (i % 3) + 1 targets with varied occurrences.
Pairs split_input() {
  Pairs pairs;
  for (int i = 0; i < 60; ++i) {
    const std::string s = "source " + std::to_string(i);
    pairs.push_back({s, "target A" + std::to_string(i), "p", 1});
    if (i % 3 >= 1) pairs.push_back({s, "target B" + std::to_string(i), "q", i % 2 ? 2 : 1});
    if (i % 3 == 2) pairs.push_back({s, "target C" + std::to_string(i), "r", 1});
  }
  pairs.push_back({"source 7", "target B7", "z", 1});  // a duplicate left in: its occurrences add up
  return pairs;
}

std::set<std::string> sources_of(const Pairs& pairs) {
  std::set<std::string> s;
  for (const auto& p : pairs) s.insert(p.source);
  return s;
}

TEST(TranslationPairs, SplitKeepsSourcesApartAndOneReferencePerEvalSource) {
  const Pairs input = split_input();
  const PairSplit split = split_by_source(input, 1234, 5, 7);
  const auto train = sources_of(split.train), valid = sources_of(split.valid), test = sources_of(split.test);
  EXPECT_EQ(valid.size(), 5u);
  EXPECT_EQ(test.size(), 7u);
  EXPECT_EQ(train.size(), 48u);
  EXPECT_EQ(split.valid.size(), 5u);
  EXPECT_EQ(split.test.size(), 7u);
  for (const auto& s : valid) EXPECT_FALSE(train.count(s) || test.count(s)) << s;
  for (const auto& s : test) EXPECT_FALSE(train.count(s)) << s;
  // Train keeps every pair of its sources.
  const auto in_train = std::count_if(input.begin(), input.end(), [&](auto& p) { return train.count(p.source); });
  EXPECT_EQ(static_cast<int64_t>(split.train.size()), in_train);
  // Valid/test: the most frequent target, ties to the smallest; the rest counted.
  int64_t alternatives = 0;
  for (const Pairs* eval : {&split.valid, &split.test}) {
    for (const TranslationPair& p : *eval) {
      const int i = std::stoi(p.source.substr(7));
      const int targets = i % 3 + 1;
      alternatives += targets - 1;
      const bool b_wins = i == 7 || (targets >= 2 && i % 2 == 1);
      EXPECT_EQ(p.target, (b_wins ? "target B" : "target A") + std::to_string(i));
    }
  }
  EXPECT_EQ(split.alternatives_dropped, alternatives);
  for (const Pairs* part : {&split.train, &split.valid, &split.test})
    EXPECT_TRUE(std::is_sorted(part->begin(), part->end(), [](auto& a, auto& b) { return a.source < b.source; }));
}

TEST(TranslationPairs, SplitIsTheSameForAnyInputOrderAndDependsOnTheSeed) {
  const Pairs input = split_input();
  const PairSplit a = split_by_source(input, 1234, 5, 7);
  Pairs shuffled = input;
  std::mt19937 gen(99);
  std::shuffle(shuffled.begin(), shuffled.end(), gen);
  const PairSplit b = split_by_source(shuffled, 1234, 5, 7);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.test, b.test);
  EXPECT_EQ(a.alternatives_dropped, b.alternatives_dropped);
  EXPECT_NE(sources_of(split_by_source(input, 1235, 5, 7).test), sources_of(a.test));
}

TEST(TranslationPairs, SplitNeedsEnoughSources) {
  const Pairs three = {{"a", "x", "o"}, {"b", "y", "o"}, {"c", "z", "o"}, {"c", "w", "o"}};
  test::expect_refused([&] { split_by_source(three, 1, 1, 2); },
                       {"only 3 distinct source strings", "need 4", "fewer valid/test"});
  test::expect_refused([&] { split_by_source(three, 1, -1, 0); }, {"must not be negative"});
  const PairSplit ok = split_by_source(three, 1, 1, 1);
  EXPECT_EQ(ok.valid.size() + ok.test.size(), 2u);
  EXPECT_EQ(sources_of(ok.train).size(), 1u);
}

}  // namespace
}  // namespace gpt2lab
