#include "serve/completion_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/options.h"
#include "serve/request_fields.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab::serve {

using nlohmann::json;

size_t longest_token_bytes(const Tokenizer& tok) {
  size_t longest = 1;
  for (int id = 0; id < tok.vocab_size(); ++id) longest = std::max(longest, tok.token_bytes(id).size());
  return longest;
}

namespace {

// OpenAI's rule: prompt plus max_tokens within the context, else 400.
// `at_least`: the prompt was not tokenized, `tokens` is a lower bound.
[[noreturn]] void over_context(const ModelConfig& c, size_t tokens, const std::string& at_least, int max_tokens,
                               RequestProblem& problem) {
  problem = {"prompt", "context_length_exceeded"};
  throw Error("this model's maximum context length is " + std::to_string(c.block_size) +
              " tokens, however you requested " + at_least + std::to_string(tokens + static_cast<size_t>(max_tokens)) +
              " tokens (" + at_least + std::to_string(tokens) + " in your prompt; " + std::to_string(max_tokens) +
              " for the completion). Please reduce your prompt or max_tokens");
}

// A prompt that cannot fit is refused before it is tokenized or copied
// (tokenizing a megabyte of text takes tens of megabytes): a token is at
// least one id, and at most the longest token's bytes of text.
void check_size(const json& p, const Tokenizer& tok, const ModelConfig& c, int max_tokens, RequestProblem& problem) {
  const size_t room = static_cast<size_t>(c.block_size - max_tokens);
  if (p.is_array() && p.size() > room) over_context(c, p.size(), "", max_tokens, problem);
  if (!p.is_string() || p.get_ref<const std::string&>().size() <= room) return;
  const size_t bytes = p.get_ref<const std::string&>().size(), longest = longest_token_bytes(tok);
  if (bytes > room * longest) {
    const size_t tokens = (bytes + longest - 1) / longest;
    over_context(c, tokens, "at least ", max_tokens, problem);
  }
}

// OpenAI's prompt: a string, a list of ids, or a list of either; absent
// means "<|endoftext|>" as in OpenAI's API. Special tokens in text count as
// such, as `gpt2lab sample --prompt` reads them. Their number and sizes are
// checked before any is tokenized.
void read_prompts(const json& body, const Tokenizer& tok, const ModelConfig& c, const RequestLimits& limits,
                  CompletionRequest& r, RequestProblem& problem) {
  const auto it = body.find("prompt");
  const json eot = std::string(Tokenizer::kEndOfText);
  const json& prompt = it == body.end() || it->is_null() ? eot : *it;
  // One prompt or a list of them, read in place (a prompt may be megabytes).
  std::vector<const json*> list;
  if (prompt.is_string() || (prompt.is_array() && !prompt.empty() && prompt.front().is_number()))
    list.push_back(&prompt);
  else if (prompt.is_array())
    for (const json& p : prompt) list.push_back(&p);
  check(!list.empty(),
        "prompt must be a string, a list of token ids, or a non-empty list of those, got " + shown(prompt));
  const size_t choices = list.size() * static_cast<size_t>(r.n);
  check(choices <= limits.max_choices, std::to_string(list.size()) + " prompts x n " + std::to_string(r.n) + " make " +
                                           std::to_string(choices) + " choices, more than this server's " +
                                           std::to_string(limits.max_choices));
  for (const json* p : list) check_size(*p, tok, c, r.max_tokens, problem);
  for (const json* item : list) {
    const json& p = *item;
    std::vector<int> ids;
    if (p.is_string()) {
      ids = tok.encode(p.get<std::string>(), /*allow_special=*/true);
      r.prompt_texts.push_back(p.get<std::string>());
    } else {
      ids = token_ids(p, "prompt " + std::to_string(r.prompts.size()), tok.vocab_size());
      Utf8StreamDecoder text;  // ids may cut a character: JSON holds UTF-8 only
      r.prompt_texts.push_back(text.push(tok.decode(ids)) + text.flush());
    }
    check(!ids.empty(), "prompt " + std::to_string(r.prompts.size()) +
                            " is empty (send \"<|endoftext|>\" for an unconditional completion)");
    r.prompts.push_back(std::move(ids));
  }
}

std::vector<std::string> read_stops(const json& body) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  const json list = it->is_string() ? json::array({*it}) : *it;
  check(list.is_array() && list.size() <= kMaxStops,
        "stop must be a string or a list of at most " + std::to_string(kMaxStops) + " strings, got " + shown(*it));
  std::vector<std::string> stops;
  for (const json& s : list) {
    check(s.is_string() && !s.get<std::string>().empty() && s.get<std::string>().size() <= kMaxStopBytes,
          "stop strings must be non-empty strings of at most " + std::to_string(kMaxStopBytes) + " bytes, got " +
              shown(s));
    stops.push_back(s.get<std::string>());
  }
  return stops;
}

// Every field read_completion_request reads (OpenAI's, llama.cpp's top_k and
// repeat_penalty), with `user`, which OpenAI takes for its own records and
// which changes nothing in a completion.
constexpr const char* kKnownFields[] = {"model",
                                        "prompt",
                                        "suffix",
                                        "max_tokens",
                                        "temperature",
                                        "top_p",
                                        "top_k",
                                        "repeat_penalty",
                                        "n",
                                        "stream",
                                        "stream_options",
                                        "logprobs",
                                        "echo",
                                        "stop",
                                        "presence_penalty",
                                        "frequency_penalty",
                                        "best_of",
                                        "logit_bias",
                                        "seed",
                                        "user"};

}  // namespace

void refuse_unknown_fields(const json& body, std::span<const char* const> known_fields, RequestProblem& problem) {
  std::vector<std::string> unknown;
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    if (std::none_of(known_fields.begin(), known_fields.end(), [&](const char* k) { return key == k; }))
      unknown.push_back(key);
  }
  if (unknown.empty()) return;
  problem.param = unknown.front();
  std::string names;
  for (size_t i = 0; i < unknown.size() && i < 5; ++i) names += (i ? ", '" : "'") + unknown[i].substr(0, 40) + "'";
  if (unknown.size() > 5) names += " and " + std::to_string(unknown.size() - 5) + " more";
  std::string known;
  for (const char* k : known_fields) known += (known.empty() ? "" : ", ") + std::string(k);
  throw Error(std::string(unknown.size() == 1 ? "unknown field " : "unknown fields ") + names +
              ": gpt2lab serve does not apply " + (unknown.size() == 1 ? "it; leave it out" : "them; leave them out") +
              " (the fields it takes: " + known + ")");
}

namespace {

// Fields OpenAI defines that this server cannot honour: refused unless they
// hold their neutral value, rather than silently ignored.
void refuse_unsupported(const json& body, RequestProblem& problem) {
  const auto neutral = [&](const char* key, const json& ok) {
    const auto it = body.find(key);
    problem.param = key;
    check(it == body.end() || it->is_null() || *it == ok,
          std::string(key) + " is not supported by gpt2lab serve (leave it out, or send " + ok.dump() + ")");
  };
  neutral("suffix", "");
  neutral("best_of", 1);
}

// One of sampling_option_table()'s rows: the default when absent, else
// checked with the table's range, in the words of `gpt2lab sample` and the
// Python module.
void read_table_field(const json& body, const char* key, const SamplingOptionSpec& spec, SamplingOptions& s) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return;
  const bool number = spec.integer ? it->is_number_integer() : it->is_number();
  check(number, std::string(key) + " must be " + range_text(spec) + ", got " + shown(*it));
  const double v = it->get<double>();
  check_sampling_value(spec, v, key);
  spec.set(s, v);
}

void read_sampling(const json& body, RequestProblem& problem, CompletionRequest& r) {
  SamplingOptions& s = r.sampling;
  // `s` starts as the server's base: the table's defaults.
  for (const char* key : {"temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty"}) {
    problem.param = key;
    read_table_field(body, key, sampling_option(key), s);
  }
  // llama.cpp's name for the CTRL repetition penalty (1 = off).
  problem.param = "repeat_penalty";
  read_table_field(body, "repeat_penalty", sampling_option("repetition_penalty"), s);
  problem.param = "seed";
  s.seed = field_uint64(body, "seed", fresh_seed());
  check(s.seed <= UINT64_MAX - static_cast<uint64_t>(r.n - 1),
        "seed " + std::to_string(s.seed) + " with n " + std::to_string(r.n) +
            " runs past the largest seed (choices use seed, seed+1, ...)");
}

// OpenAI's logit_bias: {"ID": BIAS}, the ids decimal strings inside the
// vocabulary, the biases numbers in [-100, 100].
void read_logit_bias(const json& body, const ModelConfig& c, SamplingOptions& s, RequestProblem& problem) {
  const auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return;
  problem.param = "logit_bias";
  check(it->is_object(), "logit_bias must be an object of token ids to biases, got " + shown(*it));
  for (const auto& [key, value] : it->items()) {
    int id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    check(!key.empty() && ec == std::errc() && end == key.data() + key.size() && id >= 0 && id < c.vocab_size,
          "logit_bias keys must be token ids in [0, " + std::to_string(c.vocab_size) + "), got " + shown(json(key)));
    const std::string name = "logit_bias of token " + key, range = "a finite number >= -100 and <= 100";
    check(value.is_number(), name + " must be " + range + ", got " + shown(value));
    const double bias = value.get<double>();
    char shown_bias[32];
    std::snprintf(shown_bias, sizeof shown_bias, "%g", bias);
    check(std::isfinite(bias) && std::abs(bias) <= kMaxLogitBias,
          name + " = " + shown_bias + " is out of range: it must be " + range);
    s.logit_bias.emplace_back(id, static_cast<float>(bias));
  }
}

void check_context(const CompletionRequest& r, const ModelConfig& c, RequestProblem& problem) {
  for (const auto& p : r.prompts)
    if (p.size() + static_cast<size_t>(r.max_tokens) > static_cast<size_t>(c.block_size))
      over_context(c, p.size(), "", r.max_tokens, problem);
}

}  // namespace

CompletionRequest read_completion_request(const json& body, const ModelConfig& c, const Tokenizer& tok,
                                          const SamplingOptions& base, const RequestLimits& limits,
                                          RequestProblem& problem) {
  problem = {};
  check(body.is_object(), "the request body must be a JSON object, got " + shown(body));
  CompletionRequest r;
  r.sampling = base;
  problem.param = "model";
  const auto model = body.find("model");
  if (model != body.end() && !model->is_string() && !model->is_null())
    throw Error("model must be a string, got " + shown(*model));
  refuse_unknown_fields(body, kKnownFields, problem);
  refuse_unsupported(body, problem);
  problem.param = "max_tokens";
  r.max_tokens = static_cast<int>(field_int(body, "max_tokens", 0, c.block_size, 16));
  problem.param = "n";
  r.n = static_cast<int>(field_int(body, "n", 1, static_cast<int64_t>(limits.max_choices), 1));
  problem.param = "stream";
  r.stream = field_bool(body, "stream", false);
  problem.param = "echo";
  r.echo = field_bool(body, "echo", false);
  problem.param = "logprobs";
  r.logprobs = static_cast<int>(field_int(body, "logprobs", 0, kMaxTopLogprobs, -1));
  problem.param = "stream_options";
  const auto options = body.find("stream_options");
  if (options != body.end() && !options->is_null()) {
    check(options->is_object(), "stream_options must be an object, got " + shown(*options));
    r.include_usage = field_bool(*options, "include_usage", false);
  }
  problem.param = "stop";
  r.stop = read_stops(body);
  read_sampling(body, problem, r);
  read_logit_bias(body, c, r.sampling, problem);
  problem.param = "prompt";
  read_prompts(body, tok, c, limits, r, problem);
  r.sampling.max_new_tokens = r.max_tokens;
  r.sampling.stop_at_eot = true;
  r.sampling.context = ContextPolicy::stop;
  check_context(r, c, problem);
  problem = {};
  return r;
}

}  // namespace gpt2lab::serve
