// gpt2lab eval-translation: translate a translation dataset's test (or valid)
// pairs with a model and score them with BLEU and chrF.
#include <cstdio>

#include "cli/command.h"
#include "cli/output.h"
#include "core/file.h"
#include "core/json.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "translation/translate.h"

namespace gpt2lab::cli::eval_translation_command {
namespace {

struct Flags {
  std::string model, data, split = "test", out;
  TranslateOptions options;
  int examples = 3, threads = 0;
  bool json = false;
};

// The hypotheses file replaces only a file this command wrote.
void write_hypotheses(const fs::path& path, const nlohmann::ordered_json& j) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    bool ours = false;
    try {
      const nlohmann::json had = read_json_file(path);  // any JSON: an array must not escape as a type error
      ours = had.is_object() && had.contains("format") && had["format"] == "gpt2lab translation eval";
    } catch (const Error&) {
    }
    check(ours, "--out '" + path.string() +
                    "' exists and is not a hypotheses file gpt2lab wrote; gpt2lab never replaces files it did not "
                    "write, so name another file");
  }
  write_file_atomic(path, j.dump(2) + "\n");
}

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

void print_report(const Flags& f, const TranslationEval& e, const fs::path& out) {
  char line[512];
  std::snprintf(line, sizeof line, "eval-translation: %s (%s, %zu pairs)\n", f.data.c_str(), e.split.c_str(),
                e.pairs.size());
  std::string text = line;
  const BleuScore& b = e.bleu;
  std::snprintf(line, sizeof line, "  BLEU %.2f  (%.1f/%.1f/%.1f/%.1f, BP %.3f, hyp %lld / ref %lld tokens, 13a)\n",
                b.score, b.precisions[0], b.precisions[1], b.precisions[2], b.precisions[3], b.brevity_penalty,
                static_cast<long long>(b.hyp_len), static_cast<long long>(b.ref_len));
  text += line;
  std::snprintf(line, sizeof line, "  chrF %.2f  (character 1..6-grams, beta 2)\n", e.chrf.score);
  text += line;
  const double tps = e.seconds > 0 ? static_cast<double>(e.generated_tokens) / e.seconds : 0;
  std::snprintf(line, sizeof line, "  %lld tokens generated in %.1f s (%.0f tok/s); %lld hit the length cap\n",
                static_cast<long long>(e.generated_tokens), e.seconds, tps, static_cast<long long>(e.hit_length_cap));
  text += line;
  for (size_t i = 0; i < e.pairs.size() && i < static_cast<size_t>(f.examples); ++i) {
    text += "\n  source     " + clip(e.pairs[i].source, 200) + "\n";
    text += "  reference  " + clip(e.pairs[i].target, 200) + "\n";
    text += "  hypothesis " + clip(e.hypotheses[i], 200) + "\n";
  }
  text += "\nevery hypothesis: " + out.string() + "\n";
  write_stdout(text);
}

void run(const Flags& f) {
  set_threads(f.threads);
  check(f.examples >= 0, "--examples must be >= 0");
  const fs::path out = f.out.empty() ? fs::path("eval-translation-" + f.split + ".json") : fs::path(f.out);
  const TranslationEval e = evaluate_translation(f.model, f.data, f.split, f.options);
  const nlohmann::ordered_json j = to_json(e, f.model, f.data);
  write_hypotheses(out, j);
  if (f.json) {
    nlohmann::ordered_json summary = j;
    summary.erase("items");
    summary["hypotheses_file"] = out.string();
    write_stdout(summary.dump() + "\n");
    return;
  }
  print_report(f, e, out);
}

void add(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand(
      "eval-translation",
      "Translate a translation dataset's test pairs (greedy, or beam search) and score BLEU and chrF");
  sub->add_option("--model", f->model, "Checkpoint directory (or a training run: its latest checkpoint)")->required();
  sub->add_option("--data", f->data, "Translation dataset (gpt2lab prepare-translation)")->required();
  sub->add_option("--split", f->split, "Pairs to translate")
      ->check(CLI::IsMember({"test", "valid"}))
      ->capture_default_str();
  sub->add_option("--out", f->out, "JSON file for every hypothesis (default: eval-translation-SPLIT.json)");
  sub->add_option("--max-new-tokens", f->options.max_new_tokens,
                  "Length cap per hypothesis (0 = the dataset's --max-tokens + 8)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  sub->add_option("--temperature", f->options.temperature, "0 = greedy; above 0 samples")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str();
  sub->add_option("--beam", f->options.beam,
                  "Beam search of this width (1 = greedy; length-normalized log-probability, as fairseq)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--seed", f->options.seed, "Seed for --temperature > 0 (pair i uses seed + i)")
      ->capture_default_str()
      ->transform(uint64_text());
  sub->add_option("--limit", f->options.limit, "Translate only the first N pairs (0 = all)")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  add_weights_flag(sub, f->options.weights);
  sub->add_option("--examples", f->examples, "Examples shown in the terminal")->capture_default_str();
  sub->add_flag("--json", f->json, "Scores as one JSON object on stdout instead of the report");
  add_threads_flag(sub, f->threads);
  sub->callback([f] { run(*f); });
}

GPT2LAB_COMMAND(37, add);

}  // namespace
}  // namespace gpt2lab::cli::eval_translation_command
