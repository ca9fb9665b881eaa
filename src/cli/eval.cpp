// gpt2lab eval: loss and perplexity of a checkpoint on a prepared split or
// on a text file (llama.cpp's perplexity, nanoGPT's estimate_loss).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/output.h"
#include "core/data_dir.h"
#include "core/file.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/sample/inference.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "gpt2lab/train/evaluate.h"

namespace gpt2lab::cli::eval_command {
namespace {

struct EvalFlags {
  std::string model, data, text, split = "val", tokenizer, weights;
  long batches = 0;
  int B = 4, T = 0, threads = 0;
  bool json = false;
  CLI::Option* text_flag = nullptr;
};

void report(const EvalFlags& f, const std::string& source, const EvalResult& r) {
  const double tok_s = r.seconds > 0 ? static_cast<double>(r.tokens) / r.seconds : 0;
  char line[512];
  if (f.json) {
    const nlohmann::json j = {{"model", f.model},
                              {"source", source},
                              {"loss", r.loss},
                              {"perplexity", r.perplexity()},
                              {"batches", r.batches},
                              {"tokens", r.tokens},
                              {"seconds", r.seconds},
                              {"tokens_per_s", tok_s},
                              {"path", f.weights.empty() ? "forward" : "decode"},
                              {"weights", f.weights.empty() ? "f32" : f.weights}};
    write_stdout(j.dump() + "\n");
    return;
  }
  std::snprintf(line, sizeof line,
                "eval: %s: loss %.4f, perplexity %.2f (%ld batches, %lld tokens, %.2f s, %.0f tok/s%s%s)\n",
                source.c_str(), r.loss, r.perplexity(), r.batches, static_cast<long long>(r.tokens), r.seconds, tok_s,
                f.weights.empty() ? "" : ", decoded with weights ", f.weights.c_str());
  write_stdout(line);
}

void run_eval(const EvalFlags& f) {
  set_threads(f.threads);
  check(f.text.empty() || f.data.empty(), "give --data or --text, not both");
  GPT2<float> model = load_model(f.model);
  const int T = f.T > 0 ? f.T : model.config().block_size;
  // --weights: every prediction through the decode path, in that type.
  std::unique_ptr<InferenceSession> session;
  BatchLoss loss;
  if (!f.weights.empty()) {
    session = std::make_unique<InferenceSession>(model, InferenceOptions{parse_weight_type(f.weights), nullptr});
    loss = [&](const int* in, const int* tg, int B, int T) { return decoding_loss(*session, in, tg, B, T); };
  }
  if (f.text_flag->count()) {
    // A text is scored with the tokenizer that belongs to the checkpoint.
    const Tokenizer tok = checkpoint_tokenizer(f.model, f.tokenizer);
    std::vector<int> ids = tok.encode(read_file(f.text, kMaxTextFileBytes), /*allow_special=*/false);
    ids.insert(ids.begin(), tok.eot_id());  // a document starts after <|endoftext|>, as prepare writes it
    report(f, f.text, evaluate_tokens(model, ids, f.B, T, f.batches, loss));
    return;
  }
  const std::string data = f.data.empty() ? default_dataset_dir().string() : f.data;
  std::error_code ec;
  check(!f.data.empty() || fs::exists(data, ec), "no --data given, and the default dataset '" + data +
                                                     "' does not exist (" + data_directory_origin() +
                                                     "): pass --data DIR (a folder `gpt2lab prepare` made)");
  report(f, data + " (" + f.split + ")", evaluate_split(model, data, f.split, f.B, T, f.batches, loss));
}

void add(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  auto* sub = app.add_subcommand("eval", "Loss and perplexity of a model on a prepared split or a text file");
  sub->add_option("--model", f->model, "Checkpoint directory (or a training run: its latest checkpoint)")->required();
  auto* data = sub->add_option("--data", f->data, "Prepared dataset (default: the default corpus's)");
  f->text_flag = sub->add_option("--text", f->text, "A text file, tokenized with the model's tokenizer");
  data->excludes(f->text_flag);
  sub->add_option("--split", f->split, "Split of --data")
      ->check(CLI::IsMember({"val", "train"}))
      ->capture_default_str();
  sub->add_option("--batches", f->batches, "Batches to score (0 = all the split or text holds)")
      ->check(CLI::Range(0L, 1L << 40))
      ->capture_default_str();
  sub->add_option("--batch-size,-B", f->B, "Sequences per batch")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  sub->add_option("--seq-len,-T", f->T, "Tokens per sequence (0 = the model's block_size)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  sub->add_option("--tokenizer", f->tokenizer, "For --text: gpt2 or DIR (default: the one recorded with the model)");
  sub->add_option("--weights", f->weights,
                  "Score through the decode path (one token at a time, KV cache) with the weights in f32, bf16 or "
                  "int8: the quality cost of sample --weights. Default: the batched f32 forward")
      ->check(CLI::IsMember({"f32", "bf16", "int8"}));
  sub->add_flag("--json", f->json, "One JSON object on stdout instead of a line");
  add_threads_flag(sub, f->threads);
  sub->callback([f] { run_eval(*f); });
}

GPT2LAB_COMMAND(35, add);

}  // namespace
}  // namespace gpt2lab::cli::eval_command
