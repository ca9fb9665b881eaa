#include "translation/pairs.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/core/rng.h"
#include "tokenizer/unicode.h"

namespace gpt2lab {

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const tokenizer::DecodedChar c = tokenizer::decode_char(s, i);
    if (c.code_point == 0xFFFD && c.length == 1) return false;  // a real U+FFFD is 3 bytes
    i += c.length;
  }
  return true;
}

size_t skip_digits(std::string_view s, size_t j) {
  while (j < s.size() && is_digit(s[j])) ++j;
  return j;
}

size_t skip_identifier(std::string_view s, size_t j) {
  if (j >= s.size() || !is_ident_start(s[j])) return j;
  while (j < s.size() && is_ident_char(s[j])) ++j;
  return j;
}

// "N$" at j (a positional argument): the index after it, or j.
size_t skip_position(std::string_view s, size_t j) {
  const size_t k = skip_digits(s, j);
  return k > j && k < s.size() && s[k] == '$' ? k + 1 : j;
}

// Width or precision: digits, or '*' with an optional "N$".
size_t skip_count(std::string_view s, size_t j) {
  if (j < s.size() && s[j] == '*') return skip_position(s, j + 1);
  return skip_digits(s, j);
}

// The end of a printf specifier starting with the '%' at i, or 0.
size_t printf_end(std::string_view s, size_t i) {
  size_t j = i + 1;
  if (j < s.size() && s[j] == '(') {  // Python's %(name)s
    const size_t k = skip_identifier(s, j + 1);
    if (k == j + 1 || k >= s.size() || s[k] != ')') return 0;
    j = k + 1;
  } else {
    j = skip_position(s, j);
  }
  while (j < s.size() && std::string_view("-+#0'").find(s[j]) != std::string_view::npos) ++j;
  j = skip_count(s, j);
  if (j < s.size() && s[j] == '.') j = skip_count(s, j + 1);
  for (const std::string_view length : {"hh", "ll", "h", "l", "L", "q", "j", "z", "t"}) {
    if (s.substr(j).starts_with(length)) {
      j += length.size();
      break;
    }
  }
  if (j < s.size() && std::string_view("diouxXeEfFgGaAcspnm").find(s[j]) != std::string_view::npos) return j + 1;
  return 0;
}

// The end of a Python replacement field starting with the '{' at i, or 0.
size_t brace_end(std::string_view s, size_t i) {
  size_t j = i + 1;
  const size_t name = skip_digits(s, j);
  j = name > j ? name : skip_identifier(s, j);
  while (j < s.size() && (s[j] == '.' || s[j] == '[')) {
    if (s[j] == '.') {
      const size_t k = skip_identifier(s, j + 1);
      if (k == j + 1) return 0;
      j = k;
    } else {
      const size_t close = s.find(']', j);
      if (close == std::string_view::npos || s.substr(j, close - j).find_first_of("{}") != std::string_view::npos)
        return 0;
      j = close + 1;
    }
  }
  if (j + 1 < s.size() && s[j] == '!' && std::string_view("rsa").find(s[j + 1]) != std::string_view::npos) j += 2;
  if (j < s.size() && s[j] == ':') {
    while (j < s.size() && s[j] != '}' && s[j] != '{') ++j;
  }
  return j < s.size() && s[j] == '}' ? j + 1 : 0;
}

// The end of a ${name} starting with the '$' at i, or 0.
size_t dollar_end(std::string_view s, size_t i) {
  if (i + 1 >= s.size() || s[i + 1] != '{') return 0;
  const size_t k = skip_identifier(s, i + 2);
  return k > i + 2 && k < s.size() && s[k] == '}' ? k + 1 : 0;
}

// Rules 6-9 on one candidate pair.
void add_pair(std::string_view source, std::string_view target, const std::string& origin,
              std::vector<TranslationPair>& out, CleaningStats& stats) {
  std::string s = normalize_whitespace(source), t = normalize_whitespace(target);
  if (s != source || t != target) ++stats.whitespace_normalized;
  if (!is_valid_utf8(s) || !is_valid_utf8(t)) {
    ++stats.not_utf8;
  } else if (s.empty() || t.empty()) {
    ++stats.empty;
  } else if (s == t) {
    ++stats.identical;
  } else {
    ++stats.extracted;
    out.push_back({std::move(s), std::move(t), origin});
  }
}

bool pair_less(const TranslationPair& a, const TranslationPair& b) {
  return std::tie(a.source, a.target, a.origin, a.occurrences) < std::tie(b.source, b.target, b.origin, b.occurrences);
}

}  // namespace

nlohmann::ordered_json CleaningStats::to_json() const {
  return {{"entries", entries},
          {"header", header},
          {"obsolete", obsolete},
          {"fuzzy", fuzzy},
          {"untranslated", untranslated},
          {"plural_pairs", plural_pairs},
          {"whitespace_normalized", whitespace_normalized},
          {"not_utf8", not_utf8},
          {"empty", empty},
          {"identical", identical},
          {"extracted", extracted},
          {"duplicates", duplicates},
          {"too_long", too_long},
          {"with_format_specifiers", with_format_specifiers},
          {"kept", kept}};
}

std::string normalize_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (const char c : text) {
    if (is_ascii_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

std::vector<std::string> format_specifiers(std::string_view text) {
  std::vector<std::string> found;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if ((c == '%' || c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      i += 2;  // %% {{ }}: literal characters
      continue;
    }
    const size_t end = c == '%'   ? printf_end(text, i)
                       : c == '{' ? brace_end(text, i)
                       : c == '$' ? dollar_end(text, i)
                                  : 0;
    if (end == 0) {
      ++i;
      continue;
    }
    found.emplace_back(text.substr(i, end - i));
    i = end;
  }
  return found;
}

std::vector<TranslationPair> extract_pairs(const std::vector<CatalogEntry>& entries, const std::string& origin,
                                           CleaningStats& stats) {
  std::vector<TranslationPair> out;
  for (const CatalogEntry& e : entries) {
    ++stats.entries;
    if (e.msgid.empty() && e.context.empty()) {
      ++stats.header;
    } else if (e.obsolete) {
      ++stats.obsolete;
    } else if (e.fuzzy) {
      ++stats.fuzzy;
    } else if (std::all_of(e.msgstr.begin(), e.msgstr.end(), [](const std::string& s) { return s.empty(); })) {
      ++stats.untranslated;
    } else {
      add_pair(e.msgid, e.msgstr[0], origin, out, stats);
      if (!e.msgid_plural.empty() && e.msgstr.size() >= 2 && !e.msgstr[1].empty()) {
        ++stats.plural_pairs;
        add_pair(e.msgid_plural, e.msgstr[1], origin, out, stats);
      }
    }
  }
  return out;
}

std::vector<TranslationPair> clean_pairs(std::vector<TranslationPair> pairs, const Tokenizer& tok,
                                         const CleaningOptions& o, CleaningStats& stats) {
  check(o.max_tokens >= 1,
        "the token limit of a translation pair must be at least 1 (got " + std::to_string(o.max_tokens) + ")");
  std::sort(pairs.begin(), pairs.end(), pair_less);
  std::vector<TranslationPair> unique;
  for (TranslationPair& p : pairs) {
    if (!unique.empty() && unique.back().source == p.source && unique.back().target == p.target) {
      unique.back().occurrences += p.occurrences;
      ++stats.duplicates;
    } else {
      unique.push_back(std::move(p));
    }
  }

  const auto max_tokens = static_cast<size_t>(o.max_tokens);
  std::vector<char> fits(unique.size());
  const int threads = o.threads > 0 ? o.threads : hardware_threads();
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads)
  for (size_t i = 0; i < unique.size(); ++i)
    fits[i] = tok.encode(unique[i].source, false).size() <= max_tokens &&
              tok.encode(unique[i].target, false).size() <= max_tokens;

  std::vector<TranslationPair> kept;
  for (size_t i = 0; i < unique.size(); ++i) {
    if (!fits[i]) {
      ++stats.too_long;
      continue;
    }
    if (!format_specifiers(unique[i].source).empty() || !format_specifiers(unique[i].target).empty())
      ++stats.with_format_specifiers;
    kept.push_back(std::move(unique[i]));
  }
  stats.kept += static_cast<int64_t>(kept.size());
  return kept;
}

namespace {

enum class Split : uint8_t { kTrain, kValid, kTest };

// Which split each distinct source goes to (see the header).
std::unordered_map<std::string_view, Split> assign_sources(const std::vector<TranslationPair>& pairs, uint64_t seed,
                                                           int n_valid, int n_test) {
  check(n_valid >= 0 && n_test >= 0, "the numbers of valid and test sources must not be negative (got " +
                                         std::to_string(n_valid) + " and " + std::to_string(n_test) + ")");
  std::vector<std::string_view> sources;
  sources.reserve(pairs.size());
  for (const TranslationPair& p : pairs) sources.emplace_back(p.source);
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  const int64_t need = int64_t{n_valid} + n_test + 1;
  check(static_cast<int64_t>(sources.size()) >= need,
        "only " + std::to_string(sources.size()) + " distinct source strings, but " + std::to_string(n_valid) +
            " valid and " + std::to_string(n_test) + " test sources plus at least one for training need " +
            std::to_string(need) + "; add catalogs, or ask for fewer valid/test sources");
  Rng rng(seed, kSplitRngStream);
  for (size_t i = sources.size() - 1; i > 0; --i) std::swap(sources[i], sources[rng.below(i + 1)]);
  std::unordered_map<std::string_view, Split> split;
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto n = static_cast<int64_t>(i);
    split[sources[i]] = n < n_test ? Split::kTest : n < int64_t{n_test} + n_valid ? Split::kValid : Split::kTrain;
  }
  return split;
}

// The one pair of a valid/test source from its pairs [first, last) (sorted):
// the target with the most occurrences, ties to the smallest target.
TranslationPair reference_pair(std::vector<TranslationPair>::const_iterator first,
                               std::vector<TranslationPair>::const_iterator last, int64_t& alternatives) {
  TranslationPair best;
  int64_t best_count = -1;
  for (auto it = first; it != last;) {
    auto end = it;
    int64_t count = 0;
    while (end != last && end->target == it->target) count += (end++)->occurrences;
    if (best_count >= 0) ++alternatives;
    if (count > best_count) {
      best = *it;
      best.occurrences = count;
      best_count = count;
    }
    it = end;
  }
  return best;
}

}  // namespace

PairSplit split_by_source(const std::vector<TranslationPair>& pairs, uint64_t seed, int n_valid, int n_test) {
  const auto split = assign_sources(pairs, seed, n_valid, n_test);
  std::vector<TranslationPair> sorted = pairs;
  std::sort(sorted.begin(), sorted.end(), pair_less);
  PairSplit out;
  for (auto it = sorted.cbegin(); it != sorted.cend();) {
    auto end = it;
    while (end != sorted.cend() && end->source == it->source) ++end;
    switch (split.at(it->source)) {
      case Split::kTrain: out.train.insert(out.train.end(), it, end); break;
      case Split::kValid: out.valid.push_back(reference_pair(it, end, out.alternatives_dropped)); break;
      case Split::kTest: out.test.push_back(reference_pair(it, end, out.alternatives_dropped)); break;
    }
    it = end;
  }
  return out;
}

}  // namespace gpt2lab
