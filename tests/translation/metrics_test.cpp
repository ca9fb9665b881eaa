// BLEU, chrF and the 13a tokenizer on cases small enough to work out by
// hand; tests/reference/oracle/test_metrics_nltk.py compares them with NLTK
// on larger sets.
#include "translation/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace gpt2lab {
namespace {

using Lines = std::vector<std::string>;
using Tokens = std::vector<std::string>;

BleuScore bleu(const Lines& hyps, const Lines& refs, BleuTokenize tok = BleuTokenize::none) {
  return corpus_bleu(hyps, refs, tok);
}

// ------------------------------------------------------------------ 13a

TEST(TranslationMetrics13a, SplitsPunctuationOffWords) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), (Tokens{"Hello", ",", "world", "!"}));
  EXPECT_EQ(tokenize_13a("The cat sat on the mat."), (Tokens{"The", "cat", "sat", "on", "the", "mat", "."}));
  // Every ASCII symbol but ' , - . is split off wherever it stands.
  EXPECT_EQ(tokenize_13a("(a/b) #1 50% x_y a@b \"q\" [z]"),
            (Tokens{"(", "a", "/", "b", ")",  "#", "1",  "50", "%", "x", "_",
                    "y", "a", "@", "b", "\"", "q", "\"", "[",  "z", "]"}));
  // The apostrophe and a dash between letters stay inside the word.
  EXPECT_EQ(tokenize_13a("don't well-known"), (Tokens{"don't", "well-known"}));
  EXPECT_EQ(tokenize_13a("  spaced \t out  "), (Tokens{"spaced", "out"}));
  EXPECT_EQ(tokenize_13a(""), Tokens{});
}

TEST(TranslationMetrics13a, PeriodsAndCommasBetweenDigitsStay) {
  // Between two digits: kept (numbers); with a non-digit on either side: split.
  EXPECT_EQ(tokenize_13a("It costs $3.50, or 1,000 yen."),
            (Tokens{"It", "costs", "$", "3.50", ",", "or", "1,000", "yen", "."}));
  EXPECT_EQ(tokenize_13a("1.5.2"), Tokens{"1.5.2"});
  EXPECT_EQ(tokenize_13a("a.b"), (Tokens{"a", ".", "b"}));
  EXPECT_EQ(tokenize_13a("1.a"), (Tokens{"1", ".", "a"}));  // digit before, letter after
  EXPECT_EQ(tokenize_13a("a.1"), (Tokens{"a", ".", "1"}));  // letter before, digit after
  EXPECT_EQ(tokenize_13a("1,a a,1"), (Tokens{"1", ",", "a", "a", ",", "1"}));
  EXPECT_EQ(tokenize_13a("x.."), (Tokens{"x", ".", "."}));
  EXPECT_EQ(tokenize_13a("3."), (Tokens{"3", "."}));  // the line's padding space follows
  EXPECT_EQ(tokenize_13a(".5"), (Tokens{".", "5"}));  // the padding space before it is not a digit
}

TEST(TranslationMetrics13a, DashSplitsOnlyAfterADigit) {
  EXPECT_EQ(tokenize_13a("1990-91"), (Tokens{"1990", "-", "91"}));
  EXPECT_EQ(tokenize_13a("5-"), (Tokens{"5", "-"}));
  EXPECT_EQ(tokenize_13a("-5 a-5"), (Tokens{"-5", "a-5"}));
  EXPECT_EQ(tokenize_13a("5--6"), (Tokens{"5", "-", "-6"}));  // one pass: the second dash follows a dash
}

TEST(TranslationMetrics13a, UnescapesEntitiesOncePerEntityInOrder) {
  EXPECT_EQ(tokenize_13a("&quot;Hi&quot; &amp; &lt;b&gt;"), (Tokens{"\"", "Hi", "\"", "&", "<", "b", ">"}));
  // &amp; is undone before &lt; is looked for, so "&amp;lt;" ends as "<";
  // &quot; came first, so "&amp;quot;" ends as "&quot;" (split at & and ;).
  EXPECT_EQ(tokenize_13a("&amp;lt;"), Tokens{"<"});
  EXPECT_EQ(tokenize_13a("&amp;quot;"), (Tokens{"&", "quot", ";"}));
  EXPECT_EQ(tokenize_13a("&nbsp;"), (Tokens{"&", "nbsp", ";"}));  // not one of the four
}

TEST(TranslationMetrics13a, RemovesSkippedAndJoinsLineBreaks) {
  EXPECT_EQ(tokenize_13a("a <skipped> b"), (Tokens{"a", "b"}));
  // One pass: removing the inner "<skipped>" leaves an outer one behind.
  EXPECT_EQ(tokenize_13a("<skip<skipped>ped>"), (Tokens{"<", "skipped", ">"}));
  EXPECT_EQ(tokenize_13a("hyphen-\nated line\nbreak"), (Tokens{"hyphenated", "line", "break"}));
}

TEST(TranslationMetrics13a, ReadsUnicodeAsCodePoints) {
  // Non-ASCII letters are "not digits"; Unicode white space separates tokens
  // (U+00A0, U+3000, U+2028), a zero-width space (U+200B) does not.
  EXPECT_EQ(tokenize_13a("café. é,1"), (Tokens{"café", ".", "é", ",", "1"}));
  EXPECT_EQ(tokenize_13a("a\u00a0b\u3000c\u2028d e\u200bf"), (Tokens{"a", "b", "c", "d", "e\u200bf"}));
  EXPECT_EQ(tokenize_13a("日本語。"), Tokens{"日本語。"});  // the ideographic full stop is not ASCII
  test::expect_refused([] { tokenize_13a("ok \xff"); }, {"invalid UTF-8", "byte 3"});
}

// ------------------------------------------------------------------ BLEU

TEST(TranslationMetricsBleu, PerfectMatchScores100) {
  const BleuScore s = bleu({"the cat sat on the mat ."}, {"the cat sat on the mat ."});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.matches, (std::array<int64_t, 4>{7, 6, 5, 4}));
  EXPECT_EQ(s.totals, (std::array<int64_t, 4>{7, 6, 5, 4}));
  EXPECT_EQ(s.brevity_penalty, 1.0);
  EXPECT_EQ(s.hyp_len, 7);
  EXPECT_EQ(s.ref_len, 7);
  // The same through 13a, which splits the final period off "mat.".
  const BleuScore t = bleu({"The cat sat on the mat."}, {"The cat sat on the mat."}, BleuTokenize::thirteen_a);
  EXPECT_DOUBLE_EQ(t.score, 100.0);
  EXPECT_EQ(t.hyp_len, 7);
}

TEST(TranslationMetricsBleu, NoOverlapScoresZero) {
  const BleuScore s = bleu({"a b c d"}, {"e f g h"});
  EXPECT_EQ(s.score, 0.0);
  EXPECT_EQ(s.matches, (std::array<int64_t, 4>{0, 0, 0, 0}));
  EXPECT_EQ(s.totals, (std::array<int64_t, 4>{4, 3, 2, 1}));
  EXPECT_EQ(s.precisions, (std::array<double, 4>{0, 0, 0, 0}));  // no smoothing without any match
}

TEST(TranslationMetricsBleu, BrevityPenalty) {
  // Every n-gram of the 4-token hypothesis matches (precisions 100), but the
  // reference has 6 tokens: BP = exp(1 - 6/4) = exp(-0.5) = 0.60653...
  const BleuScore s = bleu({"the cat sat on"}, {"the cat sat on the mat"});
  EXPECT_EQ(s.precisions, (std::array<double, 4>{100, 100, 100, 100}));
  EXPECT_DOUBLE_EQ(s.brevity_penalty, std::exp(-0.5));
  EXPECT_NEAR(s.score, 60.653065971263342, 1e-12);
  // No penalty for a hypothesis longer than its reference.
  EXPECT_EQ(bleu({"the cat sat on the mat today"}, {"the cat sat on the mat"}).brevity_penalty, 1.0);
  // An empty hypothesis: BP 0 (and no match: score 0).
  EXPECT_EQ(bleu({""}, {"a b"}).brevity_penalty, 0.0);
}

TEST(TranslationMetricsBleu, KnownPrecisions) {
  // hyp: the the cat sat on a mat   (7 tokens)
  // ref: the cat sat on the mat     (6 tokens; BP = 1)
  // 1-grams: the x2 (ref has 2), cat, sat, on, mat match; a does not  -> 6/7
  // 2-grams: the-the, the-cat, cat-sat, sat-on, on-a, a-mat;
  //          the-cat, cat-sat, sat-on match                           -> 3/6
  // 3-grams: the-the-cat, the-cat-sat, cat-sat-on, sat-on-a, on-a-mat;
  //          the-cat-sat, cat-sat-on match                            -> 2/5
  // 4-grams: the-cat-sat-on matches of 4                               -> 1/4
  // BLEU = 100 (6/7 * 3/6 * 2/5 * 1/4)^(1/4) = 100 (3/70)^(1/4) = 45.4995...
  const BleuScore s = bleu({"the the cat sat on a mat"}, {"the cat sat on the mat"});
  EXPECT_EQ(s.matches, (std::array<int64_t, 4>{6, 3, 2, 1}));
  EXPECT_EQ(s.totals, (std::array<int64_t, 4>{7, 6, 5, 4}));
  EXPECT_DOUBLE_EQ(s.precisions[0], 600.0 / 7);
  EXPECT_DOUBLE_EQ(s.precisions[1], 50.0);
  EXPECT_DOUBLE_EQ(s.precisions[2], 40.0);
  EXPECT_DOUBLE_EQ(s.precisions[3], 25.0);
  EXPECT_NEAR(s.score, 100 * std::pow(3.0 / 70, 0.25), 1e-12);
}

TEST(TranslationMetricsBleu, CountsAreSummedOverTheCorpus) {
  // Two sentences: the statistics add up before any division (not an
  // average of sentence scores). Sentence 1 is the known case above;
  // sentence 2 is a perfect 4-token match (4, 3, 2, 1 n-grams).
  const BleuScore s =
      bleu({"the the cat sat on a mat", "one two three four"}, {"the cat sat on the mat", "one two three four"});
  EXPECT_EQ(s.matches, (std::array<int64_t, 4>{10, 6, 4, 2}));
  EXPECT_EQ(s.totals, (std::array<int64_t, 4>{11, 9, 7, 5}));
  EXPECT_EQ(s.hyp_len, 11);
  EXPECT_EQ(s.ref_len, 10);
  EXPECT_NEAR(s.score, 100 * std::pow(10.0 / 11 * 6.0 / 9 * 4.0 / 7 * 2.0 / 5, 0.25), 1e-12);
}

TEST(TranslationMetricsBleu, ExpSmoothingHalvesEachZeroOrder) {
  // hyp "the cat sat down" vs ref "the cat sat on": 3/4, 2/3, 1/2, and no
  // 4-gram match of 1: smoothed to 100 / (2 * 1) = 50.
  // BLEU = (75 * 66.67 * 50 * 50)^(1/4) = 12,500,000^(1/4) = 59.4603...
  const BleuScore a = bleu({"the cat sat down"}, {"the cat sat on"});
  EXPECT_DOUBLE_EQ(a.precisions[3], 50.0);
  EXPECT_NEAR(a.score, std::pow(12.5e6, 0.25), 1e-10);
  // hyp "the cat ran away": 2/4, 1/3, then 0 of 2 trigrams -> 100 / (2 * 2)
  // = 25 and 0 of 1 4-gram -> 100 / (4 * 1) = 25 (the factor doubles again).
  const BleuScore b = bleu({"the cat ran away"}, {"the cat sat on"});
  EXPECT_DOUBLE_EQ(b.precisions[2], 25.0);
  EXPECT_DOUBLE_EQ(b.precisions[3], 25.0);
  EXPECT_NEAR(b.score, std::pow(50.0 * (100.0 / 3) * 25 * 25, 0.25), 1e-10);
}

TEST(TranslationMetricsBleu, NoHypothesisNgramOfAnOrderScoresZero) {
  // Three tokens have no 4-gram: sacreBLEU stops there (precision 0, score 0).
  const BleuScore s = bleu({"the cat sat"}, {"the cat sat"});
  EXPECT_EQ(s.precisions, (std::array<double, 4>{100, 100, 100, 0}));
  EXPECT_EQ(s.score, 0.0);
}

TEST(TranslationMetricsBleu, TokenizeNoneSplitsOnWhiteSpaceOnly) {
  // With 13a "mat." is two tokens; with none it is one that does not match "mat".
  EXPECT_EQ(bleu_tokens("on the mat.  ", BleuTokenize::none), (Tokens{"on", "the", "mat."}));
  EXPECT_EQ(bleu_tokens("on the mat.  ", BleuTokenize::thirteen_a), (Tokens{"on", "the", "mat", "."}));
  // The line is right-stripped first, so a trailing "-\n" is not a join.
  EXPECT_EQ(bleu_tokens("a b-\n", BleuTokenize::thirteen_a), (Tokens{"a", "b-"}));
  EXPECT_EQ(tokenize_13a("a b-\n"), (Tokens{"a", "b"}));
}

TEST(TranslationMetricsBleu, RefusesMismatchedOrInvalidInput) {
  const Lines two{"a", "b"}, three{"a", "b", "c"};
  test::expect_refused([&] { corpus_bleu(three, two); }, {"hypothesis line 3", "no reference", "3 hypotheses"});
  test::expect_refused([&] { corpus_bleu(two, three); }, {"reference line 3", "no hypothesis"});
  const Lines bad{"fine", "caf\xc3"};  // truncated é
  test::expect_refused([&] { corpus_bleu(bad, two); }, {"hypothesis line 2 (index 1)", "invalid UTF-8", "byte 3"});
  test::expect_refused([&] { corpus_bleu(two, bad); }, {"reference line 2", "invalid UTF-8"});
  // Encoded surrogates and overlong forms are not UTF-8 either.
  test::expect_refused([] { corpus_bleu(Lines{"\xed\xa0\x80"}, Lines{"x"}); }, {"hypothesis line 1"});
  test::expect_refused([] { corpus_bleu(Lines{"\xc0\xaf"}, Lines{"x"}); }, {"hypothesis line 1"});
}

// ------------------------------------------------------------------ chrF

TEST(TranslationMetricsChrf, TwoSentencesByHand) {
  // Orders 1..2, beta 2 (factor 4); white space is dropped, so "ab c" is "abc".
  //   1: hyp "abc",  ref "abc": 1-grams 3/3/3 (hyp/ref/match), 2-grams ab bc: 2/2/2
  //   2: hyp "abdd", ref "abc": 1-grams a b d d vs a b c: 4/3/2
  //                            2-grams ab bd dd vs ab bc: 3/2/1
  const Lines hyps{"ab c", "abdd"}, refs{"abc", "abc"};
  // corpus: summed 1-grams 7/6/5, 2-grams 5/4/3; P = (5/7 + 3/5) / 2 = 23/35,
  // R = (5/6 + 3/4) / 2 = 19/24; F = 5 P R / (4 P + R) = 2185/2873 = 0.76053
  const ChrfScore c = corpus_chrf(hyps, refs, 2.0, 2, ChrfAverage::corpus);
  EXPECT_EQ(c.hyp_ngrams, (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(c.ref_ngrams, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(c.matches, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(c.effective_order, 2);
  EXPECT_NEAR(c.precision, 100.0 * 23 / 35, 1e-12);
  EXPECT_NEAR(c.recall, 100.0 * 19 / 24, 1e-12);
  EXPECT_NEAR(c.score, 100.0 * 2185 / 2873, 1e-12);
  // sentence (NLTK): sentence 1 has F = 1 at both orders; sentence 2 has
  // P 2/4 R 2/3 -> F = 5 (1/3) / (8/3) = 5/8, and P 1/3 R 1/2 -> F =
  // 5 (1/6) / (11/6) = 5/11. Mean (1 + 1 + 5/8 + 5/11) / 4 = 271/352 = 0.76989
  const ChrfScore s = corpus_chrf(hyps, refs, 2.0, 2, ChrfAverage::sentence);
  EXPECT_NEAR(s.score, 100.0 * 271 / 352, 1e-12);
  // Beta weighs recall: with beta 1 the corpus F is the harmonic mean of P and R.
  const double p = 23.0 / 35, r = 19.0 / 24;
  EXPECT_NEAR(corpus_chrf(hyps, refs, 1.0, 2).score, 100 * 2 * p * r / (p + r), 1e-12);
}

TEST(TranslationMetricsChrf, PerfectAndDisjoint) {
  EXPECT_NEAR(corpus_chrf(Lines{"the cat"}, Lines{"the cat"}).score, 100.0, 1e-12);
  EXPECT_NEAR(corpus_chrf(Lines{"the cat"}, Lines{"the cat"}, 2, 6, ChrfAverage::sentence).score, 100.0, 1e-12);
  EXPECT_EQ(corpus_chrf(Lines{"abc"}, Lines{"xyz"}).score, 0.0);
  // NLTK gives an order with no match its epsilon, 1e-16, not 0.
  EXPECT_NEAR(corpus_chrf(Lines{"abc"}, Lines{"xyz"}, 2, 6, ChrfAverage::sentence).score, 100 * 1e-16, 1e-28);
  EXPECT_GT(corpus_chrf(Lines{"abc"}, Lines{"xyz"}, 2, 6, ChrfAverage::sentence).score, 0.0);
  // An empty corpus scores 0 in both modes.
  EXPECT_EQ(corpus_chrf(Lines{}, Lines{}).score, 0.0);
  EXPECT_EQ(corpus_chrf(Lines{}, Lines{}, 2, 6, ChrfAverage::sentence).score, 0.0);
}

TEST(TranslationMetricsChrf, OrdersAReferenceLacksAreLeftOut) {
  // ref "ab" has no 3-gram: sacreBLEU counts none of the hypothesis's either,
  // and averages over the 2 effective orders. 1-grams 4/2/2 (P 1/2, R 1),
  // 2-grams ab bc cd vs ab: 3/1/1 (P 1/3, R 1): P = 5/12, R = 1,
  // F = 5 (5/12) / (4 (5/12) + 1) = 25/32.
  const ChrfScore c = corpus_chrf(Lines{"abcd"}, Lines{"ab"}, 2.0, 3);
  EXPECT_EQ(c.hyp_ngrams, (std::vector<int64_t>{4, 3, 0}));
  EXPECT_EQ(c.ref_ngrams, (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(c.effective_order, 2);
  EXPECT_NEAR(c.score, 100.0 * 25 / 32, 1e-12);
}

TEST(TranslationMetricsChrf, CountsCodePointsNotBytes) {
  // "café" is 4 characters (5 bytes): 4 1-grams, 3 2-grams, ...; against
  // "cafe" the é matches nothing: matches 3, 2, 1, 0.
  const ChrfScore c = corpus_chrf(Lines{"café"}, Lines{"cafe"});
  EXPECT_EQ(c.hyp_ngrams, (std::vector<int64_t>{4, 3, 2, 1, 0, 0}));
  EXPECT_EQ(c.matches, (std::vector<int64_t>{3, 2, 1, 0, 0, 0}));
  // Unicode white space goes too: U+00A0 and U+3000 between the words.
  const ChrfScore w = corpus_chrf(Lines{"été\u00a0日本\u3000x"}, Lines{"été日本x"});
  EXPECT_EQ(w.hyp_ngrams, (std::vector<int64_t>{6, 5, 4, 3, 2, 1}));
  EXPECT_NEAR(w.score, 100.0, 1e-12);
}

TEST(TranslationMetricsChrf, RefusesBadInput) {
  test::expect_refused([] { corpus_chrf(Lines{"a"}, Lines{}); }, {"hypothesis line 1", "no reference"});
  test::expect_refused(
      [] {
        corpus_chrf(Lines{"a", "\x80"}, Lines{"a", "b"});
      },
      {"hypothesis line 2 (index 1)", "invalid UTF-8", "byte 0"});
  test::expect_refused([] { corpus_chrf(Lines{"a"}, Lines{"a"}, -1.0); }, {"beta"});
  test::expect_refused([] { corpus_chrf(Lines{"a"}, Lines{"a"}, std::nan("")); }, {"beta"});
  test::expect_refused([] { corpus_chrf(Lines{"a"}, Lines{"a"}, 2.0, 0); }, {"order"});
}

}  // namespace
}  // namespace gpt2lab
