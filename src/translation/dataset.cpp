#include "translation/dataset.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "core/file.h"
#include "core/json.h"
#include "core/lock.h"
#include "data/prepare.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/core/rng.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/sha256.h"
#include "translation/catalog.h"
#include "translation/pairs.h"

namespace gpt2lab {

namespace {

bool is_catalog_name(const fs::path& p) { return p.extension() == ".mo" || p.extension() == ".po"; }

// <lang>/LC_MESSAGES/<domain>.mo: the layout of /usr/share/locale.
bool in_language(const fs::path& p, const std::string& lang) {
  return p.parent_path().filename() == "LC_MESSAGES" && p.parent_path().parent_path().filename() == lang;
}

std::vector<TranslationPair> read_all_pairs(const std::vector<fs::path>& files, bool reverse, CleaningStats& stats,
                                            nlohmann::ordered_json& listing) {
  std::vector<TranslationPair> pairs;
  for (const auto& f : files) {
    const std::vector<CatalogEntry> entries = read_catalog(f);
    std::vector<TranslationPair> got = extract_pairs(entries, f.stem().string(), stats);
    if (reverse)
      for (auto& p : got) std::swap(p.source, p.target);
    listing.push_back({{"file", f.string()},
                       {"sha256", sha256_hex(read_file(f, kMaxCatalogBytes))},
                       {"entries", entries.size()},
                       {"pairs", got.size()}});
    pairs.insert(pairs.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
  }
  return pairs;
}

// packages.tsv beside the catalogs (scripts/fetch_translation.sh writes it):
// package, version and the .deb's SHA-256, recorded as given.
nlohmann::ordered_json read_packages(const std::vector<fs::path>& roots) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& root : roots) {
    std::error_code ec;
    const fs::path tsv = root / "packages.tsv";
    if (!fs::is_regular_file(tsv, ec)) continue;
    const std::string text = read_file(tsv, kMaxTextFileBytes);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(pos, end - pos);
      pos = end + 1;
      if (line.empty() || line[0] == '#') continue;
      const size_t a = line.find('\t'), b = line.find('\t', a + 1);
      check(a != std::string::npos && b != std::string::npos,
            tsv.string() + ": line '" + line + "' is not package<TAB>version<TAB>sha256");
      out.push_back(
          {{"package", line.substr(0, a)}, {"version", line.substr(a + 1, b - a - 1)}, {"sha256", line.substr(b + 1)}});
    }
  }
  return out;
}

std::string pairs_jsonl(const std::vector<TranslationPair>& pairs) {
  std::string out;
  for (const auto& p : pairs)
    out += nlohmann::ordered_json{{"source", p.source}, {"target", p.target}, {"origin", p.origin}}.dump() + "\n";
  return out;
}

struct Encoded {
  std::vector<int> tokens;
  std::vector<uint8_t> mask;
};

// <eot> then per pair: prompt (mask 0), target + <eot> (mask 1).
Encoded encode_pairs(const std::vector<TranslationPair>& pairs, const TranslationTemplate& fmt, const Tokenizer& tok) {
  std::vector<std::vector<int>> prompt(pairs.size()), target(pairs.size());
#pragma omp parallel for schedule(dynamic, 64)
  for (size_t i = 0; i < pairs.size(); ++i) {
    prompt[i] = tok.encode(fmt.prompt(pairs[i].source), /*allow_special=*/false);
    target[i] = tok.encode(fmt.completion(pairs[i].target), /*allow_special=*/false);
  }
  Encoded e;
  e.tokens.push_back(tok.eot_id());
  e.mask.push_back(0);
  for (size_t i = 0; i < pairs.size(); ++i) {
    e.tokens.insert(e.tokens.end(), prompt[i].begin(), prompt[i].end());
    e.mask.insert(e.mask.end(), prompt[i].size(), 0);
    e.tokens.insert(e.tokens.end(), target[i].begin(), target[i].end());
    e.tokens.push_back(tok.eot_id());
    e.mask.insert(e.mask.end(), target[i].size() + 1, 1);
  }
  return e;
}

void shuffle_pairs(std::vector<TranslationPair>& pairs, uint64_t seed) {
  Rng rng(seed, 0x50414952ull);  // "PAIR": Fisher-Yates, the same on every machine
  for (size_t i = pairs.size(); i > 1; --i) std::swap(pairs[i - 1], pairs[rng.below(i)]);
}

void check_options(const TranslationPrepareOptions& o) {
  check(!o.catalogs.empty(), "prepare-translation needs --catalogs (fetch them with scripts/fetch_translation.sh)");
  const bool code_ok =
      !o.target.empty() && o.target.size() <= 16 && std::all_of(o.target.begin(), o.target.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '@';
      });
  check(code_ok, "--target '" + o.target + "' is not a language code such as fr, de or pt_BR");
  check(o.valid_pairs >= 1 && o.test_pairs >= 1, "--valid-pairs and --test-pairs must be at least 1");
  check(o.max_tokens >= 1 && o.max_tokens <= 4096, "--max-tokens must be in [1, 4096]");
}

nlohmann::ordered_json dataset_meta(const TranslationPrepareOptions& o, const Tokenizer& tok,
                                    const TranslationTemplate& fmt, const TranslationSummary& s) {
  const std::string src = o.reverse ? o.target : "en", tgt = o.reverse ? "en" : o.target;
  return {
      {"format", "gpt2lab dataset"},
      {"version", 1},
      {"kind", "translation"},
      {"translation",
       {{"source_language", src},
        {"target_language", tgt},
        {"source_name", fmt.source_name},
        {"target_name", fmt.target_name},
        {"prompt", "<|endoftext|>" + fmt.prompt("{source}")},
        {"completion", fmt.completion("{target}") + "<|endoftext|>"},
        {"length_cap", "pairs with a side over max_tokens tokens of the length tokenizer are dropped"},
        {"loss", "on the completion's tokens and its closing <|endoftext|> only (train.mask, val.mask)"}}},
      {"shards",
       {{"train", "train.bin"},
        {"val", "val.bin"},
        {"format", "llm.c token shard; X.mask beside X.bin is the loss mask (data/token_shard.h)"}}},
      {"tokenizer", tokenizer_meta(o.tokenizer, tok)},
      {"seed", o.seed},
      {"max_tokens", o.max_tokens},
      {"pairs", {{"train", s.train_pairs}, {"valid", s.valid_pairs}, {"test", s.test_pairs}}},
      {"tokens", {{"train", s.train_tokens}, {"val", s.val_tokens}}},
      {"cleaning", s.cleaning},
  };
}

}  // namespace

std::string TranslationTemplate::prompt(const std::string& source) const {
  return source_name + ": " + source + "\n" + target_name + ":";
}

std::string language_name(const std::string& code) {
  static const std::map<std::string, std::string> names = {
      {"en", "English"},    {"fr", "French"}, {"de", "German"}, {"es", "Spanish"}, {"it", "Italian"},
      {"pt", "Portuguese"}, {"nl", "Dutch"},  {"pl", "Polish"}, {"ru", "Russian"}, {"sv", "Swedish"}};
  const auto it = names.find(code);
  return it == names.end() ? code : it->second;
}

std::vector<fs::path> find_catalogs(const std::vector<fs::path>& paths, const std::string& lang) {
  std::vector<fs::path> found;
  std::set<std::string> languages;
  for (const auto& root : paths) {
    std::error_code ec;
    check(fs::exists(root, ec), "catalogs path '" + root.string() +
                                    "' does not exist; fetch Debian's catalogs with scripts/fetch_translation.sh "
                                    "(they land in data/catalogs)");
    if (fs::is_regular_file(root, ec)) {
      found.push_back(root);  // named explicitly: taken whatever its folder
      continue;
    }
    check(fs::is_directory(root, ec), "catalogs path '" + root.string() +
                                          "' is neither a folder nor a regular file (a catalog is a .mo or .po file)");
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied);
         it != fs::recursive_directory_iterator(); ++it) {
      const fs::path& p = it->path();
      if (!it->is_regular_file() || !is_catalog_name(p)) continue;
      if (p.parent_path().filename() == "LC_MESSAGES") languages.insert(p.parent_path().parent_path().filename());
      if (in_language(p, lang)) found.push_back(p);
    }
  }
  std::string seen;
  for (const auto& l : languages) seen += (seen.empty() ? "" : ", ") + l;
  check(!found.empty(), "no catalogs for language '" + lang + "' (expected <folder>/**/" + lang +
                            "/LC_MESSAGES/*.mo or *.po); languages found: " + (seen.empty() ? "none" : seen));
  std::sort(found.begin(), found.end());
  return found;
}

PreparedPairs collect_translation_pairs(const TranslationPrepareOptions& o, const Tokenizer& length_tokenizer) {
  check_options(o);
  PreparedPairs out;
  out.files = find_catalogs(o.catalogs, o.target);
  CleaningStats stats;
  out.catalogs = nlohmann::ordered_json::array();
  std::vector<TranslationPair> pairs = read_all_pairs(out.files, o.reverse, stats, out.catalogs);
  pairs = clean_pairs(std::move(pairs), length_tokenizer, CleaningOptions{o.max_tokens}, stats);
  check(!pairs.empty(), "the " + std::to_string(out.files.size()) + " catalog(s) for '" + o.target +
                            "' hold no usable pairs after cleaning (all untranslated, fuzzy or dropped)");
  out.split = split_by_source(pairs, o.seed, o.valid_pairs, o.test_pairs);
  // Shuffled so that any prefix (eval-translation --limit) is a fair sample,
  // and the train stream mixes catalogs.
  shuffle_pairs(out.split.train, o.seed);
  shuffle_pairs(out.split.valid, o.seed + 1);
  shuffle_pairs(out.split.test, o.seed + 2);
  out.cleaning = stats.to_json();
  out.cleaning["alternative_references_dropped"] = out.split.alternatives_dropped;
  out.format = {language_name(o.reverse ? o.target : "en"), language_name(o.reverse ? "en" : o.target)};
  return out;
}

TranslationSummary write_translation_dataset(const PreparedPairs& pp, const TranslationPrepareOptions& o,
                                             const Tokenizer& tok) {
  check(!o.out.empty(), "prepare-translation needs an output folder (--out)");
  check(tok.vocab_size() <= 65536, "tokenizer '" + o.tokenizer + "' has " + std::to_string(tok.vocab_size()) +
                                       " tokens; token shards store ids as uint16, so at most 65536 fit");
  const Encoded train = encode_pairs(pp.split.train, pp.format, tok);
  const Encoded val = encode_pairs(pp.split.valid, pp.format, tok);
  TranslationSummary s;
  s.catalogs = static_cast<int64_t>(pp.files.size());
  s.train_pairs = static_cast<int64_t>(pp.split.train.size());
  s.valid_pairs = static_cast<int64_t>(pp.split.valid.size());
  s.test_pairs = static_cast<int64_t>(pp.split.test.size());
  s.train_tokens = static_cast<int64_t>(train.tokens.size());
  s.val_tokens = static_cast<int64_t>(val.tokens.size());
  s.cleaning = pp.cleaning;

  const std::string train_jsonl = pairs_jsonl(pp.split.train), valid_jsonl = pairs_jsonl(pp.split.valid),
                    test_jsonl = pairs_jsonl(pp.split.test);
  nlohmann::ordered_json meta = dataset_meta(o, tok, pp.format, s);
  meta["pair_files"] = {{"train.jsonl", sha256_hex(train_jsonl)},
                        {"valid.jsonl", sha256_hex(valid_jsonl)},
                        {"test.jsonl", sha256_hex(test_jsonl)}};
  meta["catalogs"] = pp.catalogs;
  meta["packages"] = read_packages(o.catalogs);

  publish_dataset(o.out, o.force, "prepare-translation", [&](const fs::path& staging) {
    write_token_shard(staging / "train.bin", train.tokens);
    write_mask_shard(staging / "train.mask", train.mask);
    write_token_shard(staging / "val.bin", val.tokens);
    write_mask_shard(staging / "val.mask", val.mask);
    write_file_atomic(staging / "train.jsonl", train_jsonl);
    write_file_atomic(staging / "valid.jsonl", valid_jsonl);
    write_file_atomic(staging / "test.jsonl", test_jsonl);
    write_file_atomic(staging / "meta.json", meta.dump(2) + "\n");
  });
  return s;
}

TranslationSummary prepare_translation(const TranslationPrepareOptions& o) {
  check(!o.out.empty(), "prepare-translation needs an output folder (--out)");
  check_options(o);
  check_output_directory(o.out, kDatasetFiles, o.force, "a prepared dataset");
  check_own_dataset(o.out);
  check_output_apart(o.out, o.catalogs);
  const Tokenizer tok = Tokenizer::resolve(o.tokenizer);
  return write_translation_dataset(collect_translation_pairs(o, tok), o, tok);
}

TranslationDataset load_translation_dataset(const fs::path& dir, const std::string& split) {
  check(split == "train" || split == "valid" || split == "test",
        "split '" + split + "' is not one of train, valid, test");
  const fs::path meta_path = dir / "meta.json";
  std::error_code ec;
  check(fs::is_regular_file(meta_path, ec), "'" + dir.string() +
                                                "' is not a translation dataset (no meta.json); make one with "
                                                "`gpt2lab prepare-translation --out " +
                                                dir.string() + "`");
  TranslationDataset d;
  d.meta = read_json_file(meta_path);
  check(d.meta.is_object() && d.meta.contains("kind") && d.meta["kind"] == "translation" &&
            d.meta.contains("translation") && d.meta["translation"].is_object(),
        meta_path.string() +
            ": not a translation dataset (field 'kind' is not \"translation\"); make one with "
            "`gpt2lab prepare-translation`");
  const nlohmann::json& t = d.meta["translation"];
  for (const char* key : {"source_name", "target_name"})
    check(t.contains(key) && t[key].is_string(), meta_path.string() + ": field 'translation." + key + "' is missing");
  d.format = {t["source_name"].get<std::string>(), t["target_name"].get<std::string>()};
  const fs::path file = dir / (split + ".jsonl");
  const std::string text = read_file(file, kMaxTextFileBytes);
  // The pairs are scored against what prepare wrote: an edited or swapped
  // file would give scores of other data under this dataset's name.
  std::string want;
  if (const auto files = d.meta.find("pair_files"); files != d.meta.end() && files->is_object())
    if (const auto hash = files->find(split + ".jsonl"); hash != files->end() && hash->is_string())
      want = hash->get<std::string>();
  check(want.empty() || want == sha256_hex(text),
        file.string() + " has changed since prepare-translation wrote it (its SHA-256 is not the one in " +
            meta_path.string() + "); prepare the dataset again");
  for_each_json_line(text, file.string(), [&](int line, const nlohmann::json& j) {
    check(j.is_object() && j.contains("source") && j["source"].is_string() && j.contains("target") &&
              j["target"].is_string(),
          file.string() + ":" + std::to_string(line) + ": expected {\"source\": string, \"target\": string}");
    check(!j.contains("origin") || j["origin"].is_string(),
          file.string() + ":" + std::to_string(line) + ": field 'origin' must be a string");
    d.pairs.push_back({j["source"].get<std::string>(), j["target"].get<std::string>(), j.value("origin", "")});
  });
  check(!d.pairs.empty(), file.string() + " holds no pairs");
  return d;
}

}  // namespace gpt2lab
