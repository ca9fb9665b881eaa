// Corpus preparation: text files -> llm.c token shards (train.bin, val.bin)
// plus meta.json, the dataset the trainer reads.
//
// One document per file, `<|endoftext|>` before each (GPT-2's convention: the
// model learns where documents start). Documents are ordered by path and
// every K-th goes to validation, so the split is the same on every machine
// and for every tokenizer. The output folder is written to a staging folder
// and published in one rename: a failure leaves nothing partial.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

struct PrepareOptions {
  std::vector<fs::path> inputs;   // files, or folders (recursive; hidden files skipped)
  std::string tokenizer = "gpt2"; // see Tokenizer::resolve
  fs::path out;
  int val_every = 20;             // document i (0-based, by path) is val iff i % K == K - 1
  int threads = 0;                // <= 0: all cores
  bool force = false;             // replace an existing dataset in `out`
};

struct PrepareSummary {
  int64_t train_documents = 0, val_documents = 0;
  int64_t train_tokens = 0, val_tokens = 0;
  std::string tokenizer_identity;
};

// The default corpus and dataset (data_dir.h): data/sotu and data/sotu_gpt2.
fs::path default_corpus_dir();
fs::path default_dataset_dir();

// Every document the inputs name, sorted by path; throws Error on a missing
// input.
std::vector<fs::path> list_documents(const std::vector<fs::path>& inputs);

PrepareSummary prepare_dataset(const PrepareOptions& options);

}  // namespace gpt2lab
