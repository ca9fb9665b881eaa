// Corpus preparation: text files -> llm.c token shards (train.bin, val.bin)
// plus meta.json, the dataset the trainer reads.
//
// One document per file, `<|endoftext|>` before each (GPT-2's convention: the
// model learns where documents start). Documents are ordered by path and
// every K-th goes to validation, so the split is the same on every machine
// and for every tokenizer; or, for a single text, the end of the token
// stream is held out (--val-fraction / --val-tokens). The output folder is written to a staging folder
// and published in one rename: a failure leaves nothing partial.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data_dir.h"   // default_corpus_dir, default_dataset_dir
#include "core/documents.h"  // list_documents

namespace gpt2lab {

namespace fs = std::filesystem;
class Tokenizer;

struct PrepareOptions {
  std::vector<fs::path> inputs;    // files, or folders (recursive; hidden files skipped)
  std::string tokenizer = "gpt2";  // see Tokenizer::resolve
  fs::path out;
  int val_every = 20;  // document i (0-based, by path) is val iff i % K == K - 1
  // Instead: the last fraction (or count) of all tokens is val (0 = unused).
  double val_fraction = 0;
  int64_t val_tokens = 0;
  int threads = 0;     // <= 0: all cores
  bool force = false;  // replace an existing dataset in `out`
};

struct PrepareSummary {
  int64_t train_documents = 0, val_documents = 0;
  int64_t train_tokens = 0, val_tokens = 0;
  std::string tokenizer_identity;
};

PrepareSummary prepare_dataset(const PrepareOptions& options);

// Every file a prepared dataset of any kind may hold (text or translation):
// `--force` replaces a folder holding only these, whichever command wrote it.
extern const std::vector<std::string> kDatasetFiles;

// meta.json's "tokenizer" record: the spec (resolved: a relative path would
// be read against whichever directory train runs in), identity, sha256,
// vocabulary size and <|endoftext|> id.
nlohmann::ordered_json tokenizer_meta(const std::string& spec, const Tokenizer& tok);

// Claims `out` (kDatasetFiles; see core/lock.h), has `write` fill a staging
// folder, and publishes it in one rename; on any failure the staging folder
// is removed and `out` is left as it was.
void publish_dataset(const fs::path& out, bool force, const std::string& command,
                     const std::function<void(const fs::path& staging)>& write);

// Throws unless `out` holds no dataset files or a dataset gpt2lab wrote (its
// meta.json says so): llm.c's own data folders hold train.bin/val.bin too.
void check_own_dataset(const fs::path& out);

}  // namespace gpt2lab
