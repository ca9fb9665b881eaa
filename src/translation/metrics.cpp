// BLEU, chrF and the 13a tokenizer; the definitions are in the header.
// Floating-point expressions follow the references' evaluation order, so
// that the scores agree with sacreBLEU and NLTK to the last bits.
#include "translation/metrics.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gpt2lab/core/error.h"
#include "tokenizer/unicode.h"

namespace gpt2lab {
namespace {

// Python's str.isspace() (what str.split() and re's \s use).
bool is_space(uint32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// One decoded character; `invalid` for a byte that starts no valid UTF-8
// sequence (decode_char reads it as U+FFFD of length 1; a real U+FFFD is 3).
struct Char {
  uint32_t cp;
  uint32_t len;
  bool invalid;
};
Char char_at(std::string_view s, size_t pos) {
  const tokenizer::DecodedChar d = tokenizer::decode_char(s, pos);
  return {d.code_point, d.length, d.code_point == 0xFFFD && d.length == 1};
}

// Byte offset of the first invalid UTF-8 sequence, or npos.
size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const Char c = char_at(s, i);
    if (c.invalid) return i;
    i += c.len;
  }
  return std::string_view::npos;
}

std::string invalid_utf8_message(size_t byte) {
  return "invalid UTF-8 at byte " + std::to_string(byte) +
         "; the metrics read UTF-8 text (convert it, e.g. with iconv)";
}

std::string count(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Checks what both metrics need: as many references as hypotheses, all of
// them valid UTF-8. Lines are named 1-based, as in a file.
void check_corpus(const char* metric, std::span<const std::string> hyps, std::span<const std::string> refs) {
  if (hyps.size() != refs.size()) {
    const bool more_hyps = hyps.size() > refs.size();
    const size_t line = std::min(hyps.size(), refs.size()) + 1;
    throw Error(std::string(metric) + ": " + (more_hyps ? "hypothesis" : "reference") + " line " +
                std::to_string(line) + " has no " + (more_hyps ? "reference" : "hypothesis") + " (" +
                count(hyps.size(), "hypothesis", "hypotheses") + ", " + count(refs.size(), "reference", "references") +
                "); give exactly one reference line per hypothesis line");
  }
  for (size_t i = 0; i < hyps.size(); ++i) {
    for (const auto& [text, side] : {std::pair{&hyps[i], "hypothesis"}, std::pair{&refs[i], "reference"}}) {
      const size_t at = invalid_utf8_at(*text);
      if (at != std::string_view::npos)
        throw Error(std::string(metric) + ": " + side + " line " + std::to_string(i + 1) + " (index " +
                    std::to_string(i) + "): " + invalid_utf8_message(at));
    }
  }
}

// Python's str.split(): the runs of non-space characters. Throws on invalid UTF-8.
std::vector<std::string> split_spaces(std::string_view s) {
  std::vector<std::string> out;
  size_t start = std::string_view::npos;
  for (size_t i = 0; i < s.size();) {
    const Char c = char_at(s, i);
    if (c.invalid) throw Error("tokenize: " + invalid_utf8_message(i));
    if (is_space(c.cp)) {
      if (start != std::string_view::npos) out.emplace_back(s.substr(start, i - start));
      start = std::string_view::npos;
    } else if (start == std::string_view::npos) {
      start = i;
    }
    i += c.len;
  }
  if (start != std::string_view::npos) out.emplace_back(s.substr(start));
  return out;
}

// Python's str.rstrip() (valid UTF-8).
std::string_view rstrip_spaces(std::string_view s) {
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    const Char c = char_at(s, i);
    i += c.len;
    if (!is_space(c.cp)) end = i;
  }
  return s.substr(0, end);
}

// Python's str.replace(from, to): one left-to-right pass, non-overlapping.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0;;) {
    const size_t j = s.find(from, i);
    if (j == std::string_view::npos) {
      out.append(s.substr(i));
      return out;
    }
    out.append(s.substr(i, j - i)).append(to);
    i = j + from.size();
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_period_or_comma(char c) { return c == '.' || c == ','; }

// ASCII symbols that 13a always splits off: [{-~[-` -&(-+:-@/].
bool is_13a_symbol(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x7B && u <= 0x7E) || (u >= 0x5B && u <= 0x60) || (u >= 0x20 && u <= 0x26) || (u >= 0x28 && u <= 0x2B) ||
         (u >= 0x3A && u <= 0x40) || u == 0x2F;
}

// One left-to-right pass of a two-character rewrite (Python's re.sub with a
// pattern of two one-character classes): where first(a) and second(b) hold
// for the pair at i, writes "a b " (space_before: " a b") and moves past it.
// Working on bytes gives the code-point result: the classes that are not
// ASCII-only ([^0-9]) never pair a multibyte character with something that
// could split it, since continuation bytes are neither digits nor . , -.
template <class First, class Second>
std::string rewrite_pairs(std::string_view s, First first, Second second, bool space_before) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      if (space_before) out.push_back(' ');
      out.push_back(s[i]);
      out.push_back(' ');
      out.push_back(s[i + 1]);
      if (!space_before) out.push_back(' ');
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

// --------------------------------------------------------------- BLEU

constexpr int kBleuOrder = 4;
using WordNgrams = std::array<std::unordered_map<std::string, int64_t>, kBleuOrder>;

// Counts of the 1..4-grams of `tokens`, keyed by the tokens joined with a
// space (no token holds one, so the key is unambiguous).
WordNgrams word_ngrams(const std::vector<std::string>& tokens) {
  WordNgrams counts;
  for (size_t n = 1; n <= kBleuOrder; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      std::string key = tokens[i];
      for (size_t k = 1; k < n; ++k) key.append(" ").append(tokens[i + k]);
      ++counts[n - 1][key];
    }
  }
  return counts;
}

// sacreBLEU's compute_bleu with smooth_method="exp", effective_order=False.
void finish_bleu(BleuScore& s) {
  if (s.hyp_len < s.ref_len)
    s.brevity_penalty =
        s.hyp_len > 0 ? std::exp(1.0 - static_cast<double>(s.ref_len) / static_cast<double>(s.hyp_len)) : 0.0;
  else
    s.brevity_penalty = 1.0;
  s.precisions.fill(0.0);
  bool any = false;
  for (const int64_t m : s.matches) any = any || m != 0;
  if (!any) {
    s.score = 0.0;
    return;
  }
  double smooth = 1.0;
  for (int n = 0; n < kBleuOrder; ++n) {
    const auto total = static_cast<double>(s.totals[n]);
    if (s.totals[n] == 0) break;
    if (s.matches[n] == 0) {
      smooth *= 2;
      s.precisions[n] = 100.0 / (smooth * total);
    } else {
      s.precisions[n] = 100.0 * static_cast<double>(s.matches[n]) / total;
    }
  }
  double log_sum = 0.0;
  for (const double p : s.precisions) log_sum += p == 0.0 ? -9999999999.0 : std::log(p);
  s.score = s.brevity_penalty * std::exp(log_sum / kBleuOrder);
}

// --------------------------------------------------------------- chrF

// The code points of a line without its white space (valid UTF-8).
std::u32string chrf_chars(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Char c = char_at(s, i);
    if (!is_space(c.cp)) out.push_back(static_cast<char32_t>(c.cp));
    i += c.len;
  }
  return out;
}

struct OrderCounts {
  int64_t hyp = 0, ref = 0, match = 0;
};

// Character n-gram counts of order n for one sentence pair: every
// hypothesis n-gram, every reference n-gram, and the clipped matches.
OrderCounts char_ngram_counts(std::u32string_view hyp, std::u32string_view ref, size_t n) {
  OrderCounts c;
  if (hyp.size() >= n) c.hyp = static_cast<int64_t>(hyp.size() - n + 1);
  if (ref.size() >= n) c.ref = static_cast<int64_t>(ref.size() - n + 1);
  if (c.hyp == 0 || c.ref == 0) return c;
  std::unordered_map<std::u32string_view, int64_t> ref_counts;
  ref_counts.reserve(static_cast<size_t>(c.ref));
  for (size_t i = 0; i + n <= ref.size(); ++i) ++ref_counts[ref.substr(i, n)];
  for (size_t i = 0; i + n <= hyp.size(); ++i) {
    // Each hypothesis n-gram takes one of the reference's: min(count, count).
    const auto it = ref_counts.find(hyp.substr(i, n));
    if (it != ref_counts.end() && it->second > 0) {
      --it->second;
      ++c.match;
    }
  }
  return c;
}

// NLTK's chrf_precision_recall_fscore_support: F-beta of one order of one
// sentence, epsilon when it is undefined (a ZeroDivisionError there).
double nltk_fscore(const OrderCounts& c, double factor) {
  constexpr double kEpsilon = 1e-16;
  if (c.hyp == 0 || c.ref == 0 || c.match == 0) return kEpsilon;
  const double prec = static_cast<double>(c.match) / static_cast<double>(c.hyp);
  const double rec = static_cast<double>(c.match) / static_cast<double>(c.ref);
  return (1 + factor) * (prec * rec) / (factor * prec + rec);
}

// sacreBLEU's _compute_f_score without eps_smoothing, on corpus sums; fills
// precision, recall and effective_order; returns the score (0..100).
double sacrebleu_chrf(ChrfScore& s, double factor) {
  double avg_prec = 0.0, avg_rec = 0.0;
  s.effective_order = 0;
  for (int n = 0; n < s.char_order; ++n) {
    if (s.hyp_ngrams[n] > 0 && s.ref_ngrams[n] > 0) {
      avg_prec += static_cast<double>(s.matches[n]) / static_cast<double>(s.hyp_ngrams[n]);
      avg_rec += static_cast<double>(s.matches[n]) / static_cast<double>(s.ref_ngrams[n]);
      ++s.effective_order;
    }
  }
  if (s.effective_order > 0) {
    avg_prec /= s.effective_order;
    avg_rec /= s.effective_order;
  }
  s.precision = 100 * avg_prec;
  s.recall = 100 * avg_rec;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  double score = (1 + factor) * avg_prec * avg_rec;
  score /= factor * avg_prec + avg_rec;
  return 100 * score;
}

}  // namespace

std::vector<std::string> tokenize_13a(std::string_view line) {
  const size_t bad = invalid_utf8_at(line);
  check(bad == std::string_view::npos, "tokenize_13a: " + invalid_utf8_message(bad));
  std::string s = replace_all(line, "<skipped>", "");
  s = replace_all(s, "-\n", "");
  s = replace_all(s, "\n", " ");
  s = replace_all(s, "&quot;", "\"");
  s = replace_all(s, "&amp;", "&");
  s = replace_all(s, "&lt;", "<");
  s = replace_all(s, "&gt;", ">");

  std::string padded;
  padded.reserve(s.size() * 2 + 2);
  padded.push_back(' ');
  for (const char c : s) {
    if (is_13a_symbol(c)) {
      padded.push_back(' ');
      padded.push_back(c);
      padded.push_back(' ');
    } else {
      padded.push_back(c);
    }
  }
  padded.push_back(' ');
  const auto not_digit = [](char c) { return !is_digit(c); };
  const auto is_dash = [](char c) { return c == '-'; };
  s = rewrite_pairs(padded, not_digit, is_period_or_comma, /*space_before=*/false);
  s = rewrite_pairs(s, is_period_or_comma, not_digit, /*space_before=*/true);
  s = rewrite_pairs(s, is_digit, is_dash, /*space_before=*/false);
  return split_spaces(s);
}

std::vector<std::string> bleu_tokens(std::string_view line, BleuTokenize tok) {
  const size_t bad = invalid_utf8_at(line);
  check(bad == std::string_view::npos, "BLEU: " + invalid_utf8_message(bad));
  const std::string_view stripped = rstrip_spaces(line);
  return tok == BleuTokenize::thirteen_a ? tokenize_13a(stripped) : split_spaces(stripped);
}

BleuScore corpus_bleu(std::span<const std::string> hyps, std::span<const std::string> refs, BleuTokenize tok) {
  check_corpus("BLEU", hyps, refs);
  BleuScore s;
  for (size_t i = 0; i < hyps.size(); ++i) {
    const std::vector<std::string> hyp = bleu_tokens(hyps[i], tok);
    const std::vector<std::string> ref = bleu_tokens(refs[i], tok);
    s.hyp_len += static_cast<int64_t>(hyp.size());
    s.ref_len += static_cast<int64_t>(ref.size());
    const WordNgrams hyp_counts = word_ngrams(hyp);
    const WordNgrams ref_counts = word_ngrams(ref);
    for (int n = 0; n < kBleuOrder; ++n) {
      for (const auto& [ngram, count] : hyp_counts[n]) {
        s.totals[n] += count;
        const auto it = ref_counts[n].find(ngram);
        if (it != ref_counts[n].end()) s.matches[n] += std::min(count, it->second);
      }
    }
  }
  finish_bleu(s);
  return s;
}

ChrfScore corpus_chrf(std::span<const std::string> hyps, std::span<const std::string> refs, double beta, int char_order,
                      ChrfAverage avg) {
  check(std::isfinite(beta) && beta >= 0,
        "chrF: beta must be a finite number >= 0 (2 is sacreBLEU's default), not " + std::to_string(beta));
  check(char_order >= 1 && char_order <= 64,
        "chrF: the character n-gram order must be in 1..64 (6 is the default), not " + std::to_string(char_order));
  check_corpus("chrF", hyps, refs);
  ChrfScore s;
  s.beta = beta;
  s.char_order = char_order;
  s.average = avg;
  const auto orders = static_cast<size_t>(char_order);
  s.hyp_ngrams.assign(orders, 0);
  s.ref_ngrams.assign(orders, 0);
  s.matches.assign(orders, 0);
  const double factor = std::pow(beta, 2.0);
  std::vector<double> fscore_sums(orders, 0.0);  // sentence mode: per order, over sentences
  for (size_t i = 0; i < hyps.size(); ++i) {
    const std::u32string hyp = chrf_chars(hyps[i]);
    const std::u32string ref = chrf_chars(refs[i]);
    for (size_t n = 1; n <= orders; ++n) {
      const OrderCounts c = char_ngram_counts(hyp, ref, n);
      // sacreBLEU counts a hypothesis's n-grams only against a reference that has some.
      s.hyp_ngrams[n - 1] += c.ref > 0 ? c.hyp : 0;
      s.ref_ngrams[n - 1] += c.ref;
      s.matches[n - 1] += c.match;
      fscore_sums[n - 1] += nltk_fscore(c, factor);
    }
  }
  const double corpus_score = sacrebleu_chrf(s, factor);
  if (avg == ChrfAverage::corpus) {
    s.score = corpus_score;
  } else if (!hyps.empty()) {
    double total = 0.0;
    for (const double f : fscore_sums) total += f;
    s.score = 100 * (total / static_cast<double>(orders) / static_cast<double>(hyps.size()));
  }
  return s;
}

}  // namespace gpt2lab
