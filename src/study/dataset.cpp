#include "study/dataset.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/json.h"
#include "data/prepare.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/sha256.h"
#include "tokenizer/trainer.h"
#include "train/dataloader.h"

namespace gpt2lab {

namespace {

bool has_shards(const fs::path& dir) {
  try {
    return !find_split_files(dir, "train").empty();
  } catch (const Error&) {
    return false;
  }
}

// meta.json's tokenizer fields, each of its type, the vocabulary one a
// token shard can hold (uint16 ids): an edited one was an internal error,
// and a vocabulary of 2e9 allocated 16 GB of unigram counts.
void check_meta(const nlohmann::json& meta, const fs::path& file) {
  const std::string fix =
      "; the dataset was edited or damaged: prepare it again (a study's own data/ folder: "
      "delete it and rerun, the study rebuilds it)";
  auto need = [&](bool ok, const std::string& field, const char* what) {
    check(ok, file.string() + ": field '" + field + "' must be " + what + fix);
  };
  need(meta.is_object(), "(top level)", "an object");
  if (!meta.contains("tokenizer")) return;
  const auto& t = meta["tokenizer"];
  need(t.is_object(), "tokenizer", "an object");
  for (const char* k : {"identity", "spec"})
    need(!t.contains(k) || t[k].is_string(), std::string("tokenizer.") + k, "a string");
  need(!t.contains("vocab_size") || (t["vocab_size"].is_number_integer() && t["vocab_size"].get<int64_t>() > 0 &&
                                     t["vocab_size"].get<int64_t>() <= 65536),
       "tokenizer.vocab_size", "an integer of 1 to 65536 (token shards hold 16-bit ids)");
}

StudyData from_prepared(const fs::path& dir, const std::function<void(const std::string&)>& log) {
  StudyData d;
  d.dir = dir.string();
  std::error_code ec;
  if (fs::exists(dir / "meta.json", ec)) {
    const auto meta = read_json_file(dir / "meta.json");
    check_meta(meta, dir / "meta.json");
    if (meta.contains("tokenizer")) {
      const auto& t = meta["tokenizer"];
      d.vocab_size = static_cast<int>(t.value("vocab_size", int64_t{0}));
      d.tokenizer_identity = t.value("identity", "");
      const std::string spec = t.value("spec", "");
      try {
        if (!spec.empty()) {
          (void)Tokenizer::resolve(spec);
          d.tokenizer = spec;
        }
      } catch (const Error& e) {
        log("note: the dataset's tokenizer '" + spec + "' cannot be loaded (" + e.what() +
            "); runs will have no text samples");
      }
    }
  }
  if (d.vocab_size <= 0) {
    // No meta.json: the vocabulary must at least hold every id in the shards.
    int max_id = 0;
    for (const char* split : {"train", "val"}) {
      std::vector<fs::path> files;
      try {
        files = find_split_files(dir, split);
      } catch (const Error&) {
        continue;
      }
      for (const auto& f : files) {
        const TokenShard s = TokenShard::open(f);
        for (uint16_t t : s.tokens()) max_id = std::max<int>(max_id, t);
      }
    }
    d.vocab_size = max_id + 1;
    if (d.tokenizer_identity.empty()) d.tokenizer_identity = "unknown (vocab " + std::to_string(d.vocab_size) + ")";
  }
  if (d.vocab_size > 16384)
    log("note: vocabulary of " + std::to_string(d.vocab_size) +
        " tokens: the LM head will dominate the study's small models (pass a text folder as --data to train a "
        "smaller BPE)");
  return d;
}

constexpr const char* kDigestsFile = "files.json";

// Every file under the cache's parts, by its path from the cache folder.
nlohmann::json file_digests(const fs::path& cache, const std::vector<std::string>& parts) {
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& part : parts) {
    std::error_code ec;
    if (!fs::is_directory(cache / part, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(cache / part, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec))
        j[it->path().lexically_relative(cache).generic_string()] = sha256_file(it->path().string());
    check(!ec, "'" + (cache / part).string() + "' cannot be read (" + ec.message() + "): delete '" + cache.string() +
                   "' and rerun, the study rebuilds it");
  }
  return j;
}

}  // namespace

bool cache_digests_kept(const fs::path& cache) {
  std::error_code ec;
  return fs::exists(cache / kDigestsFile, ec);
}

void keep_cache_digests(const fs::path& cache, const std::vector<std::string>& parts) {
  write_file_atomic(cache / kDigestsFile, file_digests(cache, parts).dump(2) + "\n");
}

// The files a study trains and measures on stay the ones it built: an
// edited val shard gave a rerun a new unigram baseline, which moved the
// runs that "trained" (a fourth hunt, stop 62); a translation cache's
// edited corpus shard was taken the same way (stop 63).
void check_cache_digests(const fs::path& cache, const std::vector<std::string>& parts) {
  const fs::path file = cache / kDigestsFile;
  const std::string redo = "delete '" + cache.string() + "' and rerun, the study rebuilds it";
  nlohmann::json had(nlohmann::json::value_t::discarded);
  try {
    had = read_json_file(file);
  } catch (const Error&) {
  }
  check(had.is_object(), "'" + file.string() + "' is unreadable (edited or damaged): " + redo);
  const nlohmann::json now = file_digests(cache, parts);
  for (const auto& [name, digest] : now.items())
    check(had.contains(name) && had[name] == digest,
          "'" + (cache / name).string() + "' is not a file the study built (edited?): " + redo);
  for (const auto& [name, digest] : had.items())
    check(now.contains(name), "'" + (cache / name).string() + "', a file the study built, is gone (deleted?): " + redo);
}

bool cache_holds(const fs::path& source_file, const nlohmann::json& source, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(source_file, ec)) return false;
  nlohmann::json cached(nlohmann::json::value_t::discarded);
  try {
    cached = read_json_file(source_file);
  } catch (const Error&) {
  }
  const std::string folder = source_file.parent_path().string();
  check(!cached.is_discarded(), "'" + source_file.string() + "' is unreadable (edited or damaged): delete '" + folder +
                                    "' and rerun, the study rebuilds it");
  check(cached == source, "'" + folder + "' holds data prepared from " + what + " (" + source_file.string() + ": " +
                              cached.dump() + "); use another --out for this one");
  return true;
}

StudyData ensure_study_data(const fs::path& data_arg, const fs::path& out_data, int vocab_size, int threads,
                            const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  const fs::path data = fs::absolute(data_arg).lexically_normal();
  if (!fs::exists(data, ec))
    throw Error("--data '" + data_arg.string() + "' does not exist" +
                (data == fs::absolute(default_corpus_dir()).lexically_normal()
                     ? " (the default corpus: run scripts/fetch_data.sh)"
                     : ""));
  if (fs::is_directory(data, ec) && has_shards(data)) return from_prepared(data, log);

  // A text corpus: our own BPE + shards, cached under out_data.
  const std::vector<fs::path> docs = list_documents({data});
  check(!docs.empty(), "--data '" + data_arg.string() + "' holds no text files (and no train.bin)");
  uintmax_t bytes = 0;
  for (const auto& p : docs) bytes += fs::file_size(p, ec);
  // By content: a document edited in place (same size) is other data.
  Sha256 content;
  for (const auto& p : docs) content.update(p.string() + "\n" + sha256_file(p.string()) + "\n");
  const nlohmann::json source = {{"corpus", data.string()},
                                 {"documents", docs.size()},
                                 {"bytes", bytes},
                                 {"sha256", content.hex_digest()},
                                 {"vocab_size", vocab_size}};
  const fs::path tok_dir = out_data / "tokenizer", ds_dir = out_data / "dataset";
  const fs::path source_file = out_data / "source.json";
  const std::vector<std::string> parts = {"tokenizer", "dataset"};
  // A cache without its files' digests (from before gpt2lab kept them, or
  // deleted) is built again: deterministic, it gives the same files.
  if (!cache_holds(source_file, source, "another corpus or vocabulary") || !cache_digests_kept(out_data)) {
    log("study: training a " + std::to_string(vocab_size) + "-token BPE on " + std::to_string(docs.size()) +
        " documents of " + data.string() + " and preparing shards in " + out_data.string());
    fs::create_directories(out_data);
    save_bpe(train_bpe_on_files({data}, vocab_size, threads), tok_dir, /*force=*/true);
    PrepareOptions p;
    p.inputs = {data};
    p.tokenizer = tok_dir.string();
    p.out = ds_dir;
    p.threads = threads;
    p.force = true;  // the study's own cache folder, redone after a crash
    const PrepareSummary s = prepare_dataset(p);
    log("study: " + std::to_string(s.train_tokens) + " train / " + std::to_string(s.val_tokens) + " val tokens (" +
        s.tokenizer_identity + ")");
    keep_cache_digests(out_data, parts);
    // Written last: its presence means the cache is complete.
    write_file_atomic(source_file, source.dump(2) + "\n");
  }
  // The cache is the study's own: a split missing from it (deleted by
  // hand) once went on without the validation baselines.
  for (const char* split : {"train", "val"}) {
    bool found = false;
    try {
      found = !find_split_files(ds_dir, split).empty();
    } catch (const Error&) {
    }
    check(found, "'" + ds_dir.string() + "' has no " + split + " shards (deleted?): delete '" + out_data.string() +
                     "' and rerun, the study rebuilds it");
  }
  check_cache_digests(out_data, parts);
  StudyData d = from_prepared(ds_dir, log);
  d.tokenizer = tok_dir.string();
  return d;
}

}  // namespace gpt2lab
