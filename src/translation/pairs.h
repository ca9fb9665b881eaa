// Catalog entries -> cleaned (English source, translation) pairs -> a
// train/valid/test split, for the machine-translation case study whose pairs
// come from the gettext catalogs Debian packages ship (catalog.h).
//
// Every rule below counts what it drops (CleaningStats, in this order), so
// that the numbers reconcile: pairs out of extract_pairs = entries - header -
// obsolete - fuzzy - untranslated + plural_pairs - not_utf8 - empty -
// identical, and pairs out of clean_pairs = pairs in - duplicates - too_long.
//
// Per entry (extract_pairs), in order; an entry leaves at the first rule that
// drops it:
//  1. header: msgid "" without msgctxt, the catalog's metadata entry.
//  2. obsolete: "#~" entries, no longer used by the program.
//  3. fuzzy: "#, fuzzy" entries, guesses a translator has not confirmed.
//  4. untranslated: no msgstr, or every msgstr form empty.
//  5. plural entries give two candidate pairs: the singular (msgid,
//     msgstr[0]) and, when msgid_plural and msgstr[1] are both non-empty, the
//     plural (msgid_plural, msgstr[1]) -- counted in plural_pairs. Form 1 is
//     "the plural" in French and German (nplurals=2); in languages with more
//     forms it is whatever form 1 means there. The msgctxt is not part of
//     the pair (it disambiguates the lookup, not the text).
// Per pair, each candidate then, in order:
//  6. whitespace: runs of ASCII white space (space \t \n \r \v \f) become
//     one space and the ends are trimmed, on both sides; pairs changed by it
//     are counted in whitespace_normalized (not dropped): a line break in a
//     message is layout, and the model sees one line per pair.
//  7. not_utf8: either side is not valid UTF-8 (a catalog in a legacy
//     charset; strings are bytes as catalog.h reads them).
//  8. empty: either side empty after normalization.
//  9. identical: source == target after normalization (byte for byte):
//     "OK" -> "OK", "%s" -> "%s", names; nothing to learn but copying.
// Over the corpus (clean_pairs), in order:
// 10. duplicates: pairs are sorted by (source, target, origin) and a pair
//     whose (source, target) equals the one before it is dropped, so the one
//     kept has the smallest origin; the kept pair's `occurrences` is the sum
//     of the duplicates' (how many catalogs agree on that translation, which
//     split_by_source uses to pick the reference).
// 11. too_long: either side is more than max_tokens tokens with the given
//     tokenizer (encoded as plain text: "<|endoftext|>" in a message is not
//     the special token).
// 12. with_format_specifiers: counted, NOT dropped: pairs of which either
//     side holds a format specifier as format_specifiers() finds them (a
//     model has to copy them verbatim; the evaluation may want them apart).
// kept: the pairs clean_pairs returns.
//
// Split (split_by_source): by distinct source string, so that no English
// string is in two splits (the same msgid recurs across packages, and a test
// sentence seen in training measures memory, not translation). The distinct
// sources are sorted, shuffled by Fisher-Yates with Rng(seed,
// kSplitRngStream), and the first n_test go to test, the next n_valid to
// valid, the rest to train: the result depends on the set of pairs and the
// seed, never on their order. Train keeps every pair of its sources (several
// translations of one string are all valid training targets). Valid and
// test keep one pair per source, since the evaluation scores against a
// single reference: the target with the most occurrences (summed over its
// pairs), ties to the lexicographically smallest target; the other distinct
// targets are counted in alternatives_dropped. Every split is sorted by
// (source, target, origin).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/tokenizer/tokenizer.h"
#include "translation/catalog.h"

namespace gpt2lab {

struct TranslationPair {
  std::string source, target;
  std::string origin;       // catalog file stem, e.g. "coreutils"
  int64_t occurrences = 1;  // how many identical pairs this one stands for (rule 10)

  bool operator==(const TranslationPair&) const = default;
};

struct CleaningStats {
  int64_t entries = 0;  // entries handed to extract_pairs
  // Per entry (rules 1-4), then plural pairs added (rule 5).
  int64_t header = 0, obsolete = 0, fuzzy = 0, untranslated = 0, plural_pairs = 0;
  // Per pair (rules 6-9); whitespace_normalized is a count, not a drop.
  int64_t whitespace_normalized = 0, not_utf8 = 0, empty = 0, identical = 0;
  int64_t extracted = 0;  // pairs extract_pairs returned
  // Corpus (rules 10-12); with_format_specifiers is a count, not a drop.
  int64_t duplicates = 0, too_long = 0, with_format_specifiers = 0;
  int64_t kept = 0;  // pairs clean_pairs returned

  // Every counter under its name above, in this order.
  nlohmann::ordered_json to_json() const;
};

// Rules 1-9 on one catalog's entries; adds to stats (call it once per
// catalog with the same stats).
std::vector<TranslationPair> extract_pairs(const std::vector<CatalogEntry>& entries, const std::string& origin,
                                           CleaningStats& stats);

// Rule 6 alone.
std::string normalize_whitespace(std::string_view text);

// The format specifiers in text, in order, as rule 12 counts them:
//  - printf: % [N$] [flags -+#0'] [width N or * or *N$] [.precision] [length
//    hh h l ll L q j z t] conversion diouxXeEfFgGaAcspnm, including the
//    positional %1$s and Python's %(name)s (a parenthesized key right after
//    the %). "%%" is a literal percent sign, not a specifier. The space flag
//    is not recognized, so that "50% done" and "100% sure" are prose, not
//    "% d" and "% s".
//  - Python brace fields: {} {0} {name} {0.attr} {name[key]} with an
//    optional !r/!s/!a conversion and :spec ("{count:>5}"); "{{" and "}}"
//    are literal braces.
//  - shell/Perl-style ${name} (a letter or _ then letters, digits, _).
std::vector<std::string> format_specifiers(std::string_view text);

struct CleaningOptions {
  int max_tokens = 64;  // rule 11; at least 1
  int threads = 0;      // for tokenizing; <= 0: all cores
};

// Rules 10-12 on all catalogs' pairs together; adds to stats.
std::vector<TranslationPair> clean_pairs(std::vector<TranslationPair> pairs, const Tokenizer& tok,
                                         const CleaningOptions& o, CleaningStats& stats);

struct PairSplit {
  std::vector<TranslationPair> train, valid, test;
  int64_t alternatives_dropped = 0;  // other targets of valid/test sources
};

// The Rng stream of the split ("trpairs" in ASCII): a seed shared with
// training draws different numbers here.
inline constexpr uint64_t kSplitRngStream = 0x7472'7061'6972'73ull;

// Throws Error unless there are at least n_valid + n_test + 1 distinct
// sources (train must not be empty) and n_valid, n_test >= 0.
PairSplit split_by_source(const std::vector<TranslationPair>& pairs, uint64_t seed, int n_valid, int n_test);

}  // namespace gpt2lab
