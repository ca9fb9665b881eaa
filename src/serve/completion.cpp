#include "serve/completion.h"

#include "gpt2lab/sample/generate.h"
#include "sample/stop_text.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab::serve {

using nlohmann::json;

namespace {

// A token's text for `logprobs`: its bytes, with U+FFFD for a piece of a
// character (JSON holds UTF-8 only).
std::string token_text(const Tokenizer& tok, int id) {
  Utf8StreamDecoder d;
  return d.push(tok.token_bytes(id)) + d.flush();
}

json logprobs_of(const Tokenizer& tok, const GenerationStep& step, const TokenLogprobs& lp, int top) {
  json alternatives = nullptr;
  if (top > 0) {
    alternatives = json::object();
    for (const auto& [id, value] : lp.top) alternatives[token_text(tok, id)] = value;
  }
  return {{"tokens", {token_text(tok, step.id)}},
          {"token_logprobs", {lp.chosen}},
          {"top_logprobs", top > 0 ? json::array({alternatives}) : json(nullptr)}};
}

void append_logprobs(json& all, const json& one) {
  if (all.is_null()) {
    all = one;
    return;
  }
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs"})
    if (!one[key].is_null()) all[key].push_back(one[key][0]);
}

}  // namespace

ChoiceResult run_choice(const ServedModel& m, const CompletionRequest& r, size_t p, int j,
                        const std::function<bool(const ChoicePiece&)>& on_piece) {
  ChoiceResult out;
  out.finish_reason = "length";
  if (r.echo) out.text = r.prompt_texts[p];
  if (r.max_tokens == 0) return out;
  SamplingOptions s = r.sampling;
  s.seed += static_cast<uint64_t>(j);
  Utf8StreamDecoder decoder;
  StopText stop(r.stop);
  generate_steps(m.model, r.prompts[p], s, [&](const GenerationStep& step) {
    ++out.completion_tokens;
    ChoicePiece piece;
    if (r.logprobs >= 0) {
      piece.token = step.id;
      piece.scores = token_logprobs(step.logits, step.id, r.logprobs);
      piece.logprobs = logprobs_of(m.tok, step, piece.scores, r.logprobs);
      append_logprobs(out.logprobs, piece.logprobs);
      out.scores.emplace_back(step.id, piece.scores);
    }
    // The end of text ends the choice and is not part of its text.
    if (step.id == s.eot_id) {
      out.finish_reason = "stop";
    } else {
      piece.text = stop.push(decoder.push_token(m.tok, step.id));
      if (stop.stopped()) out.finish_reason = "stop";
    }
    out.text += piece.text;
    if (!on_piece(piece)) out.cancelled = true;
    return !out.cancelled && !stop.stopped();
  });
  out.text += stop.push(decoder.flush()) + stop.flush();
  return out;
}

json usage_json(const CompletionRequest& r, int completion_tokens) {
  size_t prompt_tokens = 0;
  for (const auto& p : r.prompts) prompt_tokens += p.size();
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + static_cast<size_t>(completion_tokens)}};
}

json completion_json(const ResponseHead& head, const CompletionRequest& r, const std::vector<ChoiceResult>& choices) {
  json list = json::array();
  int completion_tokens = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    list.push_back({{"text", choices[i].text},
                    {"index", i},
                    {"logprobs", choices[i].logprobs},
                    {"finish_reason", choices[i].finish_reason}});
    completion_tokens += choices[i].completion_tokens;
  }
  return {{"id", head.id},           {"object", "text_completion"},
          {"created", head.created}, {"model", head.model},
          {"choices", list},         {"usage", usage_json(r, completion_tokens)}};
}

json chunk_json(const ResponseHead& head, size_t index, const std::string& text, const json& logprobs,
                const std::string& finish_reason) {
  json choice = {{"text", text},
                 {"index", index},
                 {"logprobs", logprobs},
                 {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  return {{"id", head.id},
          {"object", "text_completion"},
          {"created", head.created},
          {"model", head.model},
          {"choices", json::array({choice})}};
}

}  // namespace gpt2lab::serve
