// gpt2lab sample: generate text from a checkpoint or a Hugging Face GPT-2.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>
#include <sstream>

#include "cli/command.h"
#include "cli/output.h"
#include "core/file.h"
#include "core/parse.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/options.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "sample/stop_text.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab::cli::sample_command {
namespace {

std::vector<int> parse_ids(const std::string& text) {
  std::vector<int> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) ids.push_back(static_cast<int>(parse_int(word, "--prompt-ids", 0, 1 << 24)));
  return ids;
}

struct SampleFlags {
  std::string model, prompt, prompt_file, prompt_ids, tokenizer, context = "stop", format = "text";
  SamplingOptions s;
  // The text of each sampling_option_table() flag, as given.
  std::vector<std::string> sampling_text = std::vector<std::string>(sampling_option_table().size());
  std::vector<CLI::Option*> sampling_flags;
  std::vector<std::string> stop, logit_bias;
  int num_samples = 1, threads = 0;
  bool quiet = false;
  CLI::Option *prompt_flag = nullptr, *prompt_file_flag = nullptr, *prompt_ids_flag = nullptr;
};

// The prompt (prefill) and generation (decode) rates, as llama.cpp prints
// them, on stderr. The first token's time is the prompt's: its logits come
// out of the prefill; every later token is one decode step.
void report_speed(size_t prompt_tokens, size_t new_tokens, double first_s, double total_s) {
  const double prompt_rate = first_s > 0 ? prompt_tokens / first_s : 0;
  std::fprintf(stderr, "sample: prompt     %5zu tokens in %9.2f ms (%8.1f tok/s)\n", prompt_tokens, first_s * 1e3,
               prompt_rate);
  if (new_tokens < 2) return;
  const double decode_s = total_s - first_s, steps = static_cast<double>(new_tokens - 1);
  std::fprintf(stderr, "sample: generation %5zu tokens in %9.2f ms (%8.1f tok/s, %.2f ms/token)\n", new_tokens - 1,
               decode_s * 1e3, decode_s > 0 ? steps / decode_s : 0, decode_s / steps * 1e3);
}

// One sample on stdout (text streamed as it is drawn, up to a stop string).
void write_sample(const SampleFlags& o, const GPT2<float>& model, const Tokenizer* tok, const std::vector<int>& prompt,
                  const std::string& prompt_text, const SamplingOptions& s) {
  using Clock = std::chrono::steady_clock;
  Utf8StreamDecoder decoder;
  StopText stop(o.stop);
  bool first = true;
  size_t drawn = 0;
  double first_s = 0;
  const auto t0 = Clock::now();
  if (o.format == "text") write_stdout(decoder.push(prompt_text.empty() ? tok->decode(prompt) : prompt_text));
  generate(
      model, prompt, s,
      [&](int id) {
        if (drawn++ == 0) first_s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (o.format == "ids") {
          write_stdout((first ? "" : " ") + std::to_string(id));
          first = false;
          return true;
        }
        write_stdout(stop.push(decoder.push_token(*tok, id)));
        return !stop.stopped();
      },
      [](const std::string& note) { std::fprintf(stderr, "\nnote: %s\n", note.c_str()); });
  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  write_stdout((o.format == "text" ? stop.push(decoder.flush()) + stop.flush() : std::string()) + "\n");
  if (!o.quiet) report_speed(prompt.size(), drawn, first_s, total_s);
}

// Every sample, one after another on stdout.
void write_samples(const SampleFlags& o, const GPT2<float>& model, const Tokenizer* tok, const std::vector<int>& prompt,
                   const std::string& prompt_text) {
  for (int i = 0; i < o.num_samples; ++i) {
    SamplingOptions s = o.s;
    s.seed = o.s.seed + static_cast<uint64_t>(i);
    if (o.num_samples > 1) {
      char head[96];
      std::snprintf(head, sizeof head, "%s---- sample %d (seed %llu) ----\n", i ? "\n" : "", i + 1,
                    static_cast<unsigned long long>(s.seed));
      write_stdout(head);
    }
    write_sample(o, model, tok, prompt, prompt_text, s);
  }
}

// Each sampling flag given, checked against the table's range (the same
// check and words as Python's keywords and the server's fields).
void apply_sampling_flags(SampleFlags& o) {
  const auto& table = sampling_option_table();
  for (size_t i = 0; i < table.size(); ++i) {
    if (o.sampling_flags[i]->count() == 0) continue;
    const std::string& text = o.sampling_text[i];
    double v = 0;  // the strict number check (cli/app.cpp) passed it: a decimal number
    std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
    check_sampling_value(table[i], v, table[i].flag);
    table[i].set(o.s, v);
  }
}

// --logit-bias ID=BIAS, OpenAI's logit_bias (ids checked against the
// vocabulary once the model is loaded).
void apply_logit_bias(SampleFlags& o) {
  for (const std::string& item : o.logit_bias) {
    const size_t eq = item.find('=');
    check(eq != std::string::npos, "--logit-bias: '" + item + "' is not ID=BIAS (e.g. 50256=-100)");
    const int id = static_cast<int>(parse_int(std::string_view(item).substr(0, eq), "--logit-bias: the token id", 0,
                                              std::numeric_limits<int>::max()));
    o.s.logit_bias.emplace_back(id,
                                static_cast<float>(parse_double(std::string_view(item).substr(eq + 1),
                                                                "--logit-bias: the bias of " + std::to_string(id))));
  }
}

void run_sample(SampleFlags& o) {
  set_threads(o.threads);
  apply_sampling_flags(o);
  apply_logit_bias(o);
  check(o.prompt_flag->count() + o.prompt_file_flag->count() + o.prompt_ids_flag->count() == 1,
        "give the prompt with --prompt, --prompt-file or --prompt-ids");
  o.s.context = o.context == "slide" ? ContextPolicy::slide : ContextPolicy::stop;
  validate(o.s);  // before anything is loaded or printed
  check(o.stop.empty() || o.format == "text", "--stop applies to text; it cannot be used with --format ids");
  (void)StopText(o.stop);  // refuses an empty stop string before anything is loaded
  check(o.s.seed <= UINT64_MAX - static_cast<uint64_t>(o.num_samples - 1),
        "--seed " + std::to_string(o.s.seed) + " with --num-samples " + std::to_string(o.num_samples) +
            " runs past the largest seed (samples use seed, seed+1, ...)");
  GPT2<float> model = load_model(o.model);
  const ModelConfig& c = model.config();
  // Text needs a tokenizer: the flag, else the checkpoint's record, else GPT-2's.
  std::unique_ptr<Tokenizer> tok;
  if (o.prompt_ids_flag->count() == 0 || o.format == "text") {
    tok = std::make_unique<Tokenizer>(checkpoint_tokenizer(o.model, o.tokenizer));
    o.s.eot_id = tok->eot_id();
  }
  std::vector<int> prompt;
  std::string prompt_text;
  if (o.prompt_ids_flag->count()) {
    prompt = parse_ids(o.prompt_ids);
  } else {
    prompt_text = o.prompt_flag->count() ? o.prompt : read_file(o.prompt_file, kMaxTextFileBytes);
    prompt = tok->encode(prompt_text, /*allow_special=*/true);
  }
  check(!prompt.empty(), "the prompt is empty (start with \"<|endoftext|>\" for unconditional samples)");
  check_generation(c, prompt, o.s);                      // before the prompt is printed
  o.s.packed = pack_decode_weights(model, o.s.weights);  // once, and outside the timings
  write_samples(o, model, tok.get(), prompt, prompt_text);
}

void add_flags(CLI::App* sub, SampleFlags& f) {
  auto* o = &f;
  sub->add_option("--model", o->model,
                  "Checkpoint directory: ours, or a Hugging Face GPT-2 (config.json + model.safetensors)")
      ->required();
  auto* p1 = sub->add_option("--prompt", o->prompt, "Prompt text");
  auto* p2 = sub->add_option("--prompt-file", o->prompt_file, "Read the prompt from this file");
  auto* p3 = sub->add_option("--prompt-ids", o->prompt_ids, "Prompt as token ids separated by spaces");
  p1->excludes(p2)->excludes(p3);
  p2->excludes(p3);
  for (size_t i = 0; i < sampling_option_table().size(); ++i) {
    const SamplingOptionSpec& spec = sampling_option_table()[i];
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", spec.get(o->s));
    o->sampling_flags.push_back(sub->add_option(spec.flag, o->sampling_text[i], spec.help)
                                    ->type_name(spec.integer ? "INT" : "FLOAT")
                                    ->default_str(shown));
  }
  sub->add_option("--seed", o->s.seed, "Random seed (same seed, same text)")
      ->check(uint64_text())
      ->capture_default_str();
  sub->add_option("--num-samples", o->num_samples, "Independent samples (seeds seed, seed+1, ...)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_flag("--stop-at-eot", o->s.stop_at_eot, "Stop at <|endoftext|>");
  sub->add_option("--logit-bias", o->logit_bias,
                  "ID=BIAS (repeatable): add BIAS, in [-100, 100], to token ID's logit (OpenAI's logit_bias)")
      ->take_all();
  add_weights_flag(sub, o->s.weights);
  sub->add_option("--tokenizer", o->tokenizer,
                  "gpt2 or a directory with encoder.json + vocab.bpe (default: the one recorded with the model)");
  sub->add_option("--context", o->context,
                  "When the context (block_size) is full: stop, or slide (keep the last 3/4, re-encode, go on)")
      ->check(CLI::IsMember({"stop", "slide"}))
      ->capture_default_str();
  sub->add_option("--format", o->format, "Output: text (prompt + continuation, streamed) or ids (new token ids)")
      ->check(CLI::IsMember({"text", "ids"}))
      ->capture_default_str();
  sub->add_option("--stop", o->stop, "Stop before this text (repeatable); it is not printed")->take_all();
  sub->add_flag("--quiet", o->quiet, "No speed summary on stderr");
  add_threads_flag(sub, o->threads);
  o->prompt_flag = p1;
  o->prompt_file_flag = p2;
  o->prompt_ids_flag = p3;
}

void add(CLI::App& app) {
  auto o = std::make_shared<SampleFlags>();
  auto* sub = app.add_subcommand("sample", "Generate text (KV cache; temperature, top-k, top-p sampling)");
  add_flags(sub, *o);
  sub->callback([o] { run_sample(*o); });
}

GPT2LAB_COMMAND(40, add);

}  // namespace
}  // namespace gpt2lab::cli::sample_command
