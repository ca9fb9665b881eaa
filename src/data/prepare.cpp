#include "data/prepare.h"

#include <cmath>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/json.h"
#include "core/lock.h"
#include "core/threads.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {

namespace {

// Each document as <|endoftext|> followed by its tokens, encoded in parallel.
std::vector<std::vector<int>> encode_documents(const std::vector<std::string>& texts, const Tokenizer& tok,
                                               int threads_wanted) {
  std::vector<std::vector<int>> encoded(texts.size());
  const int threads = threads_wanted > 0 ? threads_wanted : hardware_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int> ids;
    ids.reserve(texts[i].size() / 4 + 2);
    ids.push_back(tok.eot_id());
    // The text of a document is plain text: a literal "<|endoftext|>" in it
    // is not the boundary marker.
    const std::vector<int> body = tok.encode(texts[i], /*allow_special=*/false);
    ids.insert(ids.end(), body.begin(), body.end());
    encoded[i] = std::move(ids);
  }
  return encoded;
}

// meta.json: the shards' format, the tokenizer by identity, the split.
nlohmann::ordered_json dataset_meta(const PrepareOptions& o, const Tokenizer& tok, const PrepareSummary& summary,
                                    const nlohmann::json& sources) {
  return {
      {"format", "gpt2lab dataset"},
      {"version", 1},
      {"shards",
       {{"train", "train.bin"},
        {"val", "val.bin"},
        {"format",
         "llm.c token shard: 256 x int32 header (magic 20240520, "
         "version 1, token count), then uint16 tokens"}}},
      {"tokenizer", tokenizer_meta(o.tokenizer, tok)},
      {"document_separator", "<|endoftext|> before each document"},
      {"val_split", o.val_fraction > 0 || o.val_tokens > 0
                        ? nlohmann::ordered_json{{"by", "tokens"}, {"held_out", summary.val_tokens}}
                        : nlohmann::ordered_json{{"by", "documents"}, {"every", o.val_every}}},
      {"val_every", o.val_every},
      {"documents", {{"train", summary.train_documents}, {"val", summary.val_documents}}},
      {"tokens", {{"train", summary.train_tokens}, {"val", summary.val_tokens}}},
      {"sources", sources},
  };
}

// --val-fraction / --val-tokens: the end of the token stream (every
// document in path order, as nanoGPT's 90/10 split) becomes val.bin.
void hold_out_tail(std::vector<int>& train, std::vector<int>& val, const PrepareOptions& o) {
  const auto total = static_cast<int64_t>(train.size());
  const int64_t n = o.val_tokens > 0 ? o.val_tokens : std::llround(o.val_fraction * static_cast<double>(total));
  check(n >= 1 && n < total, "holding out " + std::to_string(n) + " of the " + std::to_string(total) +
                                 " tokens would leave an empty split; give a value between 1 and " +
                                 std::to_string(total - 1) + " tokens");
  val.assign(train.end() - n, train.end());
  train.resize(static_cast<size_t>(total - n));
}

}  // namespace

const std::vector<std::string> kDatasetFiles = {"train.bin", "train.mask",  "val.bin",     "val.mask",
                                                "meta.json", "train.jsonl", "valid.jsonl", "test.jsonl"};

nlohmann::ordered_json tokenizer_meta(const std::string& spec, const Tokenizer& tok) {
  return {{"spec", spec == "gpt2" ? spec : fs::absolute(spec).lexically_normal().string()},
          {"name", tok.name()},
          {"identity", tok.identity()},
          {"sha256", tok.content_hash()},
          {"vocab_size", tok.vocab_size()},
          {"eot_id", tok.eot_id()}};
}

void publish_dataset(const fs::path& out, bool force, const std::string& command,
                     const std::function<void(const fs::path& staging)>& write) {
  DirectoryLock lock = claim_output_directory(out, kDatasetFiles, force, "a prepared dataset", command);
  const fs::path staging = make_staging_directory(out);
  try {
    write(staging);
    publish_directory(staging, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    lock.abandon();
    throw;
  }
}

// Shards under our names are ours only beside our meta.json: llm.c's own
// data folders hold train.bin/val.bin too.
void check_own_dataset(const fs::path& out) {
  std::error_code ec;
  if (std::none_of(kDatasetFiles.begin(), kDatasetFiles.end(),
                   [&](const std::string& name) { return fs::exists(fs::symlink_status(out / name, ec)); }))
    return;
  bool ours = false;
  try {
    const nlohmann::json meta = read_json_file(out / "meta.json");
    ours = meta.is_object() && meta.value("format", "") == "gpt2lab dataset";
  } catch (const Error&) {
  }
  check(ours, "--out '" + out.string() +
                  "' holds token shards, pair files or a meta.json that gpt2lab's prepare did not write (no gpt2lab "
                  "meta.json); "
                  "gpt2lab never replaces files it did not write, so choose a new or empty folder");
}

PrepareSummary prepare_dataset(const PrepareOptions& o) {
  check(o.val_every >= 2, "--val-every must be at least 2 (got " + std::to_string(o.val_every) +
                              "); K means every K-th document "
                              "goes to validation");
  check(std::isfinite(o.val_fraction) && o.val_fraction >= 0 && o.val_fraction < 1,
        "--val-fraction must be in [0, 1) (0.1 holds out the last 10% of the tokens)");
  check(o.val_tokens >= 0, "--val-tokens must be >= 0");
  check(o.val_fraction == 0 || o.val_tokens == 0, "give --val-fraction or --val-tokens, not both");
  check(!o.out.empty(), "prepare needs an output folder (--out)");
  // Publishing swaps the whole folder: it must hold nothing but a dataset.
  // Checked now, and claimed (locked, checked again) only to publish, so that
  // a refused run leaves no folder behind.
  const std::vector<std::string>& ours = kDatasetFiles;
  check_output_directory(o.out, ours, o.force, "a prepared dataset");
  check_own_dataset(o.out);
  check_output_apart(o.out, o.inputs);
  const Tokenizer tok = Tokenizer::resolve(o.tokenizer);
  check(tok.vocab_size() <= 65536, "tokenizer '" + o.tokenizer + "' has " + std::to_string(tok.vocab_size()) +
                                       " tokens; token shards store ids as uint16, so at most 65536 fit");

  const std::vector<fs::path> docs = list_documents(o.inputs);
  check(!docs.empty(), "the inputs hold no documents (empty corpus)");
  const bool by_tokens = o.val_fraction > 0 || o.val_tokens > 0;
  check(by_tokens || static_cast<int64_t>(docs.size()) / o.val_every > 0,
        "only " + std::to_string(docs.size()) + " document(s): with --val-every " + std::to_string(o.val_every) +
            " the validation split would be empty; give more documents, a smaller K, or hold out the end of the "
            "text with --val-fraction F or --val-tokens N");

  // Read every file before any work, so an unreadable one fails fast.
  std::vector<std::string> texts(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) texts[i] = read_file(docs[i], kMaxTextFileBytes);

  const std::vector<std::vector<int>> encoded = encode_documents(texts, tok, o.threads);

  PrepareSummary summary;
  summary.tokenizer_identity = tok.identity();
  std::vector<int> train, val;
  nlohmann::json sources = nlohmann::json::array();
  for (size_t i = 0; i < docs.size(); ++i) {
    const bool is_val = !by_tokens && static_cast<int64_t>(i % o.val_every) == o.val_every - 1;
    auto& split = is_val ? val : train;
    split.insert(split.end(), encoded[i].begin(), encoded[i].end());
    (is_val ? summary.val_documents : summary.train_documents) += 1;
    sources.push_back({{"path", docs[i].string()},
                       {"split", by_tokens ? "train+val" : (is_val ? "val" : "train")},
                       {"bytes", texts[i].size()},
                       {"tokens", encoded[i].size()}});
  }
  if (by_tokens) hold_out_tail(train, val, o);
  summary.train_tokens = static_cast<int64_t>(train.size());
  summary.val_tokens = static_cast<int64_t>(val.size());

  const nlohmann::ordered_json meta = dataset_meta(o, tok, summary, sources);
  publish_dataset(o.out, o.force, "prepare", [&](const fs::path& staging) {
    write_token_shard(staging / "train.bin", train);
    write_token_shard(staging / "val.bin", val);
    write_file_atomic(staging / "meta.json", meta.dump(2) + "\n");
  });
  return summary;
}

}  // namespace gpt2lab
