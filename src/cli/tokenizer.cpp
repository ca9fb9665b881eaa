// gpt2lab tokenizer train: learn a byte-level BPE in GPT-2's file format.
#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "core/documents.h"
#include "core/lock.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/trainer.h"

namespace gpt2lab::cli::tokenizer_command {
namespace {

void add(CLI::App& app) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string out;
    int vocab_size = 0;
    int threads = 0;
    bool force = false;
  };
  auto f = std::make_shared<Flags>();
  auto* group = app.add_subcommand("tokenizer", "Tokenizer tools (train a byte-level BPE)");
  group->require_subcommand(1);
  auto* train = group->add_subcommand("train",
                                      "Learn a byte-level BPE with GPT-2's pre-tokenization; writes encoder.json + "
                                      "vocab.bpe");
  train->add_option("--input", f->inputs, "Text files or folders of them")->required();
  train->add_option("--vocab-size", f->vocab_size, "Tokens in all: 256 bytes + merges + <|endoftext|>")->required();
  train->add_option("--out", f->out, "Output folder (usable as --tokenizer)")->required();
  train->add_flag("--force", f->force, "Replace a tokenizer already in --out");
  add_threads_flag(train, f->threads);
  train->callback([f] {
    set_threads(f->threads);
    check_output_directory(f->out, {"encoder.json", "vocab.bpe"}, f->force, "a tokenizer");  // before the work
    check_output_apart(f->out, std::vector<fs::path>(f->inputs.begin(), f->inputs.end()));
    const auto start = std::chrono::steady_clock::now();
    const BpeVocab vocab =
        train_bpe_on_files(std::vector<fs::path>(f->inputs.begin(), f->inputs.end()), f->vocab_size, f->threads);
    save_bpe(vocab, f->out, f->force);
    const Tokenizer tok = Tokenizer::load(f->out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("trained %s: %d tokens (%zu merges) in %.1f s\n  identity %s\n", f->out.c_str(), tok.vocab_size(),
                vocab.merges.size(), seconds, tok.identity().c_str());
  });
}

GPT2LAB_COMMAND(22, add);

}  // namespace
}  // namespace gpt2lab::cli::tokenizer_command
