// Machine-translation metrics: corpus BLEU and chrF as sacreBLEU 2.x computes
// them by default, with sacreBLEU's "13a" tokenizer (mteval-v13a), plus the
// sentence-averaged chrF of NLTK's corpus_chrf. One reference per
// hypothesis. Scores are on sacreBLEU's scale, 0..100 (NLTK's are 0..1).
//
// Text is UTF-8 and is read as Unicode code points: "white space" is what
// Python's str.isspace() accepts (ASCII \t\n\v\f\r, U+001C..U+001F, space,
// U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
// U+3000), because that is what the reference implementations split on.
// Invalid UTF-8 is refused (Error naming the line), never guessed at.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2lab {

// sacreBLEU's default tokenizer, "13a" (mteval-v13a.pl), exactly:
//   1. remove "<skipped>", join "-\n" (remove it), turn "\n" into a space,
//      then unescape &quot; &amp; &lt; &gt; (in that order, one pass each,
//      so "&amp;lt;" becomes "<");
//   2. pad the line with a space on each side, then apply four rewrites, each
//      one left-to-right pass over the whole line:
//        - a space on each side of every ASCII symbol except ' , - . (that
//          is { | } ~ [ \ ] ^ _ ` ! " # $ % & ( ) * + : ; < = > ? @ /),
//        - "." and "," split off when the character before is not a digit,
//        - "." and "," split off when the character after is not a digit,
//        - "-" split off when the character before is a digit;
//   3. split on white space (see above).
// So "3.14" and "1,000" stay whole, "end." and "a,b" split, "1990-91"
// becomes "1990 - 91". Throws Error on invalid UTF-8.
std::vector<std::string> tokenize_13a(std::string_view line);

// BLEU's tokenization: 13a (sacreBLEU's default) or none (split on white
// space only, for text that is already tokenized).
enum class BleuTokenize { thirteen_a, none };

// The tokens BLEU counts for one line: the line right-stripped of white
// space, then tokenized as `tok` says. Throws Error on invalid UTF-8.
std::vector<std::string> bleu_tokens(std::string_view line, BleuTokenize tok);

struct BleuScore {
  double score = 0;                    // 0..100
  std::array<int64_t, 4> matches{};    // clipped n-gram matches, n = 1..4, summed over the corpus
  std::array<int64_t, 4> totals{};     // hypothesis n-grams, n = 1..4, summed over the corpus
  std::array<double, 4> precisions{};  // 0..100, after smoothing (see corpus_bleu)
  double brevity_penalty = 1;
  int64_t hyp_len = 0, ref_len = 0;  // tokens, summed over the corpus
};

// Corpus BLEU as sacreBLEU's BLEU() computes it by default: 4-gram precisions
// with clipped counts, summed over the corpus; uniform weights; brevity
// penalty exp(1 - ref_len / hyp_len) when hyp_len < ref_len (0 when
// hyp_len is 0); smooth_method "exp" (sacreBLEU's default, mteval-v13a's
// smoothing):
//   - no match at all of any order: score 0 and all precisions 0;
//   - otherwise, for n = 1..4 in turn: if no hypothesis n-gram exists, stop
//     (this and the higher orders keep precision 0, and the score is 0);
//     with c matches of t n-grams the precision is 100 c / t, or, when
//     c = 0, 100 / (2^k t) for the k-th such order (k = 1, 2, ...);
//   - score = BP * exp(sum over n of log(precision_n) / 4), a 0 precision
//     counting as log = -9999999999 (that is, score 0).
// Each line is right-stripped of white space, then tokenized. An empty line
// is an empty sentence. Throws Error naming the line when the counts differ
// or a line is not valid UTF-8.
BleuScore corpus_bleu(std::span<const std::string> hyps, std::span<const std::string> refs,
                      BleuTokenize tok = BleuTokenize::thirteen_a);

// How chrF averages over the corpus.
//   corpus:   sacreBLEU's CHRF() default. Each line loses its white space;
//             for each order n = 1..char_order, the character n-gram counts
//             (hypothesis, reference, matched = sum of min counts) are summed
//             over the corpus -- a hypothesis's n-grams counting only when
//             its reference has n-grams of that order. Precision and recall
//             are averaged over the "effective" orders (summed hypothesis and
//             reference counts both > 0), and
//             score = 100 (1 + beta^2) P R / (beta^2 P + R), or 0 when
//             P + R = 0 (no epsilon anywhere).
//   sentence: NLTK's corpus_chrf. For each sentence and order the F-beta
//             score of that order's precision and recall; it is 1e-16
//             (NLTK's epsilon) when the hypothesis or the reference has no
//             n-gram of that order, or none matches. The score is 100 times
//             the mean over orders and sentences.
enum class ChrfAverage { corpus, sentence };

struct ChrfScore {
  double score = 0;  // 0..100, per `average`
  // In both modes, from the corpus-summed statistics that `corpus` uses:
  // the averaged precision and recall (0..100) over `effective_order`
  // orders, and per order n = 1..char_order (index n - 1) the counts.
  double precision = 0, recall = 0;
  int effective_order = 0;
  std::vector<int64_t> hyp_ngrams, ref_ngrams, matches;
  double beta = 2;
  int char_order = 6;
  ChrfAverage average = ChrfAverage::corpus;
};

// chrF (Popović 2015) over Unicode code points, white space removed,
// orders 1..char_order, averaged as `avg` says (see ChrfAverage). beta >= 0
// and finite; 1 <= char_order <= 64. An empty corpus scores 0. Throws Error
// naming the line when the counts differ or a line is not valid UTF-8.
ChrfScore corpus_chrf(std::span<const std::string> hyps, std::span<const std::string> refs, double beta = 2.0,
                      int char_order = 6, ChrfAverage avg = ChrfAverage::corpus);

}  // namespace gpt2lab
