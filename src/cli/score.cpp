// gpt2lab score: corpus BLEU and chrF of translations against references,
// one sentence per line, as the sacrebleu command scores them by default
// (13a tokenization, exp smoothing; chrF2 on character 1..6-grams).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cli/command.h"
#include "cli/output.h"
#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "translation/metrics.h"

namespace gpt2lab::cli::score_command {
namespace {

struct ScoreFlags {
  std::string hyp, ref, tokenize = "13a", chrf_average = "corpus";
  double chrf_beta = 2;
  int chrf_char_order = 6;
  bool json = false, show_tokens = false;
};

// The lines of a text file: each ends at "\n" or "\r\n"; a last line without
// a newline counts, nothing after the last newline does.
std::vector<std::string> read_lines(const std::string& path) {
  const std::string text = read_file(path, kMaxTextFileBytes);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = end + 1;
  }
  return lines;
}

BleuTokenize tokenize_mode(const ScoreFlags& f) {
  return f.tokenize == "none" ? BleuTokenize::none : BleuTokenize::thirteen_a;
}

std::string join(const std::vector<std::string>& tokens) {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) out.append(i ? " " : "").append(tokens[i]);
  return out;
}

// --show-tokens: every line as BLEU counts it, instead of the scores.
void show_tokens(const ScoreFlags& f, const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  nlohmann::json j = {{"hyp_tokens", nlohmann::json::array()}, {"ref_tokens", nlohmann::json::array()}};
  std::string text;
  for (const auto& [lines, side, key] :
       {std::tuple{&hyps, "hyp", "hyp_tokens"}, std::tuple{&refs, "ref", "ref_tokens"}}) {
    for (size_t i = 0; i < lines->size(); ++i) {
      std::vector<std::string> tokens;
      try {
        tokens = bleu_tokens((*lines)[i], tokenize_mode(f));
      } catch (const Error& e) {
        throw Error(std::string(side == std::string_view("hyp") ? f.hyp : f.ref) + ", line " + std::to_string(i + 1) +
                    ": " + e.what());
      }
      if (f.json)
        j[key].push_back(tokens);
      else
        text += std::string(side) + " " + std::to_string(i + 1) + ": " + join(tokens) + "\n";
    }
  }
  write_stdout(f.json ? j.dump() + "\n" : text);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "chrF2", or "chrF(beta=2.5)" for a beta that is not a whole number.
std::string chrf_name(double beta) {
  if (beta == std::floor(beta) && beta < 1e6) return "chrF" + std::to_string(static_cast<long>(beta));
  char buf[64];
  std::snprintf(buf, sizeof buf, "chrF(beta=%g)", beta);
  return buf;
}

void report(const ScoreFlags& f, size_t lines, const BleuScore& b, const ChrfScore& c) {
  const bool has_ratio = b.ref_len > 0;
  const double ratio = has_ratio ? static_cast<double>(b.hyp_len) / static_cast<double>(b.ref_len) : 0.0;
  if (f.json) {
    const nlohmann::json j = {{"hyp", f.hyp},
                              {"ref", f.ref},
                              {"lines", lines},
                              {"bleu",
                               {{"score", b.score},
                                {"precisions", b.precisions},
                                {"matches", b.matches},
                                {"totals", b.totals},
                                {"brevity_penalty", b.brevity_penalty},
                                {"ratio", has_ratio ? nlohmann::json(ratio) : nlohmann::json(nullptr)},
                                {"hyp_len", b.hyp_len},
                                {"ref_len", b.ref_len},
                                {"tokenize", f.tokenize},
                                {"smooth", "exp"}}},
                              {"chrf",
                               {{"score", c.score},
                                {"beta", c.beta},
                                {"char_order", c.char_order},
                                {"average", f.chrf_average},
                                {"precision", c.precision},
                                {"recall", c.recall},
                                {"effective_order", c.effective_order},
                                {"hyp_ngrams", c.hyp_ngrams},
                                {"ref_ngrams", c.ref_ngrams},
                                {"matches", c.matches}}}};
    write_stdout(j.dump() + "\n");
    return;
  }
  std::string precisions;
  for (size_t n = 0; n < b.precisions.size(); ++n) precisions += (n ? "/" : "") + fixed(b.precisions[n], 1);
  std::string out = "BLEU = " + fixed(b.score, 2) + " " + precisions + " (BP = " + fixed(b.brevity_penalty, 3) +
                    " ratio = " + (has_ratio ? fixed(ratio, 3) : "n/a") + " hyp_len = " + std::to_string(b.hyp_len) +
                    " ref_len = " + std::to_string(b.ref_len) + ") tok:" + f.tokenize + " smooth:exp\n";
  out += chrf_name(c.beta) + " = " + fixed(c.score, 2) + " (character 1.." + std::to_string(c.char_order) + "-grams, ";
  out += f.chrf_average == "corpus"
             ? "P = " + fixed(c.precision, 2) + " R = " + fixed(c.recall, 2) + ", statistics summed over the corpus)\n"
             : "F-scores averaged over sentences and orders, as NLTK's corpus_chrf)\n";
  out += "(" + std::to_string(lines) + " lines)\n";
  write_stdout(out);
}

void run_score(const ScoreFlags& f) {
  const std::vector<std::string> hyps = read_lines(f.hyp);
  const std::vector<std::string> refs = read_lines(f.ref);
  check(!hyps.empty() || !refs.empty(), "nothing to score: " + f.hyp + " and " + f.ref +
                                            " hold no lines (one sentence per line, the same number in both)");
  if (f.show_tokens) {
    show_tokens(f, hyps, refs);
    return;
  }
  try {
    const BleuScore bleu = corpus_bleu(hyps, refs, tokenize_mode(f));
    const ChrfScore chrf = corpus_chrf(hyps, refs, f.chrf_beta, f.chrf_char_order,
                                       f.chrf_average == "sentence" ? ChrfAverage::sentence : ChrfAverage::corpus);
    report(f, hyps.size(), bleu, chrf);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (hypotheses: " + f.hyp + ", references: " + f.ref + ")");
  }
}

void add(CLI::App& app) {
  auto f = std::make_shared<ScoreFlags>();
  auto* sub = app.add_subcommand("score", "BLEU and chrF of translations against references (as sacrebleu scores)");
  sub->add_option("--hyp", f->hyp, "Translations to score, one sentence per line (UTF-8)")->required();
  sub->add_option("--ref", f->ref, "References, one per line, line for line with --hyp")->required();
  sub->add_option("--tokenize", f->tokenize,
                  "BLEU tokenization: 13a (mteval-v13a, sacrebleu's) or none (split on spaces)")
      ->check(CLI::IsMember({"13a", "none"}))
      ->capture_default_str();
  sub->add_option("--chrf-beta", f->chrf_beta, "chrF's beta: recall weighs beta times as much as precision")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  sub->add_option("--chrf-char-order", f->chrf_char_order, "chrF's largest character n-gram")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--chrf-average", f->chrf_average,
                  "corpus: sum n-gram statistics over the corpus (sacrebleu); sentence: average sentence F-scores "
                  "(NLTK's corpus_chrf)")
      ->check(CLI::IsMember({"corpus", "sentence"}))
      ->capture_default_str();
  sub->add_flag("--show-tokens", f->show_tokens, "Print each line's tokens as BLEU counts them, instead of scores");
  sub->add_flag("--json", f->json, "One JSON object on stdout instead of text");
  sub->callback([f] { run_score(*f); });
}

GPT2LAB_COMMAND(36, add);

}  // namespace
}  // namespace gpt2lab::cli::score_command
