#include "gpt2lab/sample/generate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/inference.h"
#include "gpt2lab/sample/options.h"
#include "sample/draw.h"

namespace gpt2lab {

namespace {

std::string bias_text(float bias) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(bias));
  return buf;
}

// Anything that changes the raw logits before temperature.
bool adjusts_logits(const SamplingOptions& o) {
  return o.repetition_penalty != 1.0f || o.presence_penalty != 0.0f || o.frequency_penalty != 0.0f ||
         !o.logit_bias.empty();
}

// OpenAI's presence and frequency penalties on the tokens drawn so far.
void apply_openai_penalties(std::vector<double>& z, const SamplingOptions& o, std::span<const int> drawn) {
  if (o.presence_penalty == 0.0f && o.frequency_penalty == 0.0f) return;
  std::vector<int> count(z.size(), 0);
  for (int id : drawn)
    if (id >= 0 && static_cast<size_t>(id) < z.size()) ++count[static_cast<size_t>(id)];
  for (size_t i = 0; i < z.size(); ++i)
    if (count[i] > 0) z[i] -= double{o.frequency_penalty} * count[i] + double{o.presence_penalty};
}

}  // namespace

std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingOptions& o,
                                          std::span<const int> history, std::span<const int> drawn) {
  const size_t V = logits.size();
  std::vector<double> z(logits.begin(), logits.end());
  for (const auto& [id, bias] : o.logit_bias)
    if (id >= 0 && static_cast<size_t>(id) < V) z[static_cast<size_t>(id)] += bias;
  apply_openai_penalties(z, o, drawn);
  if (o.repetition_penalty != 1.0f) {
    // CTRL (Keskar et al. 2019) as Hugging Face applies it: once per seen id.
    std::vector<char> seen(V, 0);
    for (int id : history)
      if (id >= 0 && static_cast<size_t>(id) < V) seen[static_cast<size_t>(id)] = 1;
    for (size_t i = 0; i < V; ++i)
      if (seen[i]) z[i] = z[i] > 0 ? z[i] / o.repetition_penalty : z[i] * o.repetition_penalty;
  }
  std::vector<double> p(V, 0.0);
  if (o.temperature <= 0.0f) {  // greedy: all mass on the first maximum
    p[static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin())] = 1.0;
    return p;
  }
  for (double& v : z) v /= o.temperature;
  std::vector<char> keep(V, 1);
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < V) {
    std::vector<double> sorted = z;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[static_cast<size_t>(o.top_k - 1)];
    for (size_t i = 0; i < V; ++i) keep[i] = z[i] >= kth;  // ties with the k-th survive
  }
  const double maxv = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (size_t i = 0; i < V; ++i) {
    p[i] = keep[i] ? std::exp(z[i] - maxv) : 0.0;
    sum += p[i];
  }
  for (double& v : p) v /= sum;
  if (o.top_p < 1.0f) {
    // Nucleus (Holtzman et al. 2020): the smallest set of most probable
    // tokens whose mass reaches top_p; always at least one.
    std::vector<size_t> order(V);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    double mass = 0;
    size_t kept = 0;
    for (; kept < V && (kept == 0 || mass < o.top_p); ++kept) mass += p[order[kept]];
    for (size_t r = kept; r < V; ++r) p[order[r]] = 0.0;
    for (double& v : p) v /= mass;
  }
  return p;
}

int sample_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng, std::span<const int> history,
                 std::span<const int> drawn) {
  if (o.temperature <= 0.0f && !adjusts_logits(o))
    return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  const std::vector<double> p = sampling_distribution(logits, o, history, drawn);
  const double u = rng.uniform();
  double cum = 0;
  int last_nonzero = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    cum += p[i];
    last_nonzero = static_cast<int>(i);
    if (u < cum) return static_cast<int>(i);
  }
  return last_nonzero;  // rounding left u just above the total
}

uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

void validate(const SamplingOptions& o) {
  // The real fields are floats: compared with the bounds as floats.
  for (const SamplingOptionSpec& s : sampling_option_table()) check_sampling_value(s, s.get(o), s.flag, !s.integer);
  for (const auto& [id, bias] : o.logit_bias)
    check(std::isfinite(bias) && std::abs(bias) <= kMaxLogitBias,
          "logit_bias of token " + std::to_string(id) + " = " + bias_text(bias) +
              " is out of range: it must be a finite number >= -100 and <= 100");
}

void check_generation(const ModelConfig& c, std::span<const int> prompt, const SamplingOptions& o) {
  validate(o);
  for (const auto& [id, bias] : o.logit_bias)
    check(id >= 0 && id < c.vocab_size, "logit_bias names token " + std::to_string(id) +
                                            ", outside the model's vocabulary of " + std::to_string(c.vocab_size));
  check(!prompt.empty(), "generate: the prompt must hold at least one token");
  for (size_t i = 0; i < prompt.size(); ++i)
    check(prompt[i] >= 0 && prompt[i] < c.vocab_size,
          "prompt token " + std::to_string(i) + " is id " + std::to_string(prompt[i]) +
              ", outside the model's vocabulary of " + std::to_string(c.vocab_size));
  check(static_cast<int>(prompt.size()) <= c.block_size || o.context == ContextPolicy::slide,
        "the prompt has " + std::to_string(prompt.size()) + " tokens, more than the model's context of " +
            std::to_string(c.block_size) + " (use --context slide to keep only its end)");
}

bool last_token_ends(const SamplingOptions& o, int last, int drawn) {
  return (o.stop_at_eot && last == o.eot_id) || drawn == o.max_new_tokens;
}

int draw_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng, std::vector<int>& seq, int& drawn,
               int position) {
  // Weights holding NaN/inf (a diverged run's model, a damaged export) give
  // NaN logits, from which every sampler would silently return some fixed
  // token; say so instead.
  // (The message is built only on failure: this runs for every token.)
  const auto bad = std::find_if(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); });
  if (bad != logits.end())
    throw Error("generate: the model's output for token " + std::to_string(bad - logits.begin()) + " at position " +
                std::to_string(position - 1) +
                " is not finite (NaN or inf): the weights hold non-finite values (is this the model of a"
                " diverged run?)");
  // The tokens drawn so far are the context's last `drawn` (a slide
  // re-encodes the end of seq but keeps it whole).
  const std::span<const int> so_far = std::span<const int>(seq).last(static_cast<size_t>(drawn));
  const int tok = sample_token(logits, o, rng, seq, so_far);
  seq.push_back(tok);
  ++drawn;
  return tok;
}

Generator::Generator(const GPT2<float>& model, std::span<const int> prompt, const SamplingOptions& o,
                     std::function<void(const std::string&)> notice)
    : o_(o), notice_(std::move(notice)), rng_(o.seed) {
  const ModelConfig& c = model.config();
  check_generation(c, prompt, o);
  keep_on_slide_ = std::max(1, c.block_size * 3 / 4);
  block_size_ = c.block_size;
  seq_.assign(prompt.begin(), prompt.end());
  if (static_cast<int>(seq_.size()) > c.block_size) {
    say("prompt longer than the context: keeping its last " + std::to_string(keep_on_slide_) + " tokens");
    seq_.erase(seq_.begin(), seq_.end() - keep_on_slide_);
  }
  session_ = std::make_unique<InferenceSession>(model, InferenceOptions{o.weights, o.packed});
  logits_ = session_->append(seq_);
  done_ = o.max_new_tokens == 0;
}

Generator::~Generator() = default;

void Generator::say(const std::string& note) const {
  if (notice_) notice_(note);
}

// Feeds the last drawn token (or slides the window), unless generation ends
// with it.
void Generator::advance() {
  if (last_token_ends(o_, seq_.back(), drawn_)) {
    done_ = true;
  } else if (session_->position() == block_size_) {
    if (o_.context == ContextPolicy::stop) {
      say("context of " + std::to_string(block_size_) + " tokens is full; stopping");
      done_ = true;
      return;
    }
    say("context full: sliding the window, re-encoding the last " + std::to_string(keep_on_slide_) + " tokens");
    session_->reset();
    logits_ = session_->append(std::span<const int>(seq_).last(static_cast<size_t>(keep_on_slide_)));
  } else {
    logits_ = session_->append(std::span<const int>(&seq_.back(), 1));
  }
}

std::span<const float> Generator::logits() const { return {logits_, static_cast<size_t>(session_->vocab_size())}; }

std::optional<int> Generator::next() {
  if (!done_ && drawn_ > 0) advance();
  if (done_) return std::nullopt;
  return draw_token(std::span<const float>(logits_, static_cast<size_t>(session_->vocab_size())), o_, rng_, seq_,
                    drawn_, session_->position());
}

std::vector<int> generate(const GPT2<float>& model, std::span<const int> prompt, const SamplingOptions& o,
                          const std::function<bool(int)>& on_token,
                          const std::function<void(const std::string&)>& notice) {
  if (!on_token) return generate_steps(model, prompt, o, nullptr, notice);
  return generate_steps(
      model, prompt, o, [&](const GenerationStep& step) { return on_token(step.id); }, notice);
}

TokenLogprobs token_logprobs(std::span<const float> logits, int id, int top) {
  check(id >= 0 && static_cast<size_t>(id) < logits.size(),
        "token_logprobs: id " + std::to_string(id) + " is outside the " + std::to_string(logits.size()) + " logits");
  const double maxv = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float z : logits) sum += std::exp(static_cast<double>(z) - maxv);
  const double log_z = maxv + std::log(sum);
  TokenLogprobs out;
  out.chosen = logits[static_cast<size_t>(id)] - log_z;
  const size_t k = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), [&](int a, int b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  for (size_t r = 0; r < k; ++r) out.top.emplace_back(order[r], logits[static_cast<size_t>(order[r])] - log_z);
  return out;
}

std::vector<int> generate_steps(const GPT2<float>& model, std::span<const int> prompt, const SamplingOptions& o,
                                const std::function<bool(const GenerationStep&)>& on_step,
                                const std::function<void(const std::string&)>& notice) {
  Generator g(model, prompt, o, notice);
  std::vector<int> out;
  while (const std::optional<int> tok = g.next()) {
    out.push_back(*tok);
    if (on_step && !on_step(GenerationStep{*tok, g.logits()})) break;
  }
  return out;
}

}  // namespace gpt2lab
