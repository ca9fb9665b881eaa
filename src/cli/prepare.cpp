// gpt2lab prepare: text files -> train.bin / val.bin / meta.json.
#include <cstdio>

#include "cli/command.h"
#include "core/threads.h"
#include "data/prepare.h"

namespace gpt2lab::cli::prepare_command {
namespace {

void add(CLI::App& app) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string out;
    PrepareOptions options;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand("prepare",
                                 "Tokenize text files (one document each) into llm.c token shards train.bin/val.bin "
                                 "+ meta.json");
  sub->add_option(
      "--input", f->inputs,
      "Text files or folders of them (default: the State of the Union corpus, " + default_corpus_dir().string() + ")");
  sub->add_option("--tokenizer", f->options.tokenizer, "\"gpt2\" or a folder with encoder.json + vocab.bpe")
      ->capture_default_str();
  sub->add_option("--out", f->out, "Output folder (default: " + default_dataset_dir().string() + ")");
  sub->add_option("--val-every", f->options.val_every, "Every K-th document (sorted by path) goes to val.bin")
      ->capture_default_str();
  auto* frac = sub->add_option("--val-fraction", f->options.val_fraction,
                               "Hold out the last fraction F of all tokens as val.bin instead (nanoGPT: 0.1)");
  auto* toks = sub->add_option("--val-tokens", f->options.val_tokens,
                               "Hold out the last N tokens as val.bin instead (llm.c's scripts)");
  frac->excludes(toks);
  sub->add_flag("--force", f->options.force, "Replace a dataset already prepared in --out");
  add_threads_flag(sub, f->options.threads);
  sub->callback([f] {
    set_threads(f->options.threads);
    PrepareOptions o = f->options;
    if (f->inputs.empty()) {
      std::error_code ec;
      check(fs::exists(default_corpus_dir(), ec),
            "no --input given, and the default corpus '" + default_corpus_dir().string() + "' does not exist (" +
                data_directory_origin() + "): pass --input FILES, or fetch it (scripts/setup.sh in the source tree)");
      o.inputs = {default_corpus_dir()};
    } else {
      o.inputs.assign(f->inputs.begin(), f->inputs.end());
    }
    o.out = f->out.empty() ? default_dataset_dir() : fs::path(f->out);
    const PrepareSummary s = prepare_dataset(o);
    std::printf(
        "prepared %s\n  tokenizer %s\n  train: %lld documents, %lld tokens\n"
        "  val:   %lld documents, %lld tokens\n",
        o.out.c_str(), s.tokenizer_identity.c_str(), static_cast<long long>(s.train_documents),
        static_cast<long long>(s.train_tokens), static_cast<long long>(s.val_documents),
        static_cast<long long>(s.val_tokens));
  });
}

GPT2LAB_COMMAND(21, add);

}  // namespace
}  // namespace gpt2lab::cli::prepare_command
