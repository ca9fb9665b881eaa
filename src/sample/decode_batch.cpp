#include "gpt2lab/sample/decode_batch.h"

#include <algorithm>
#include <exception>
#include <string>

#include "gpt2lab/core/error.h"
#include "sample/draw.h"
#include "sample/forward_pass.h"

namespace gpt2lab {

struct DecodeBatch::Sequence {
  KvCache cache;
  int pos = 0;
  bool held = false;
  std::vector<float> logits;
};

DecodeBatch::DecodeBatch(const GPT2<float>& model, InferenceOptions options)
    : model_(model), pass_(std::make_unique<ForwardPass>(model, std::move(options))) {}

DecodeBatch::~DecodeBatch() = default;

DecodeBatch::Sequence& DecodeBatch::held(int id) const {
  check(id >= 0 && static_cast<size_t>(id) < sequences_.size() && sequences_[static_cast<size_t>(id)]->held,
        "DecodeBatch: no sequence " + std::to_string(id) + " is held");
  return *sequences_[static_cast<size_t>(id)];
}

int DecodeBatch::free_slot() {
  auto free = std::find_if(sequences_.begin(), sequences_.end(), [](const auto& s) { return !s->held; });
  if (free != sequences_.end()) return static_cast<int>(free - sequences_.begin());
  sequences_.push_back(std::make_unique<Sequence>(Sequence{KvCache(model_.config(), pass_->kv_bf16()), 0, false, {}}));
  return static_cast<int>(sequences_.size()) - 1;
}

int DecodeBatch::fork(int id) {
  const Sequence& from = held(id);
  const int to = free_slot();
  Sequence& s = *sequences_[static_cast<size_t>(to)];
  s.cache.copy_prefix(from.cache, from.pos);
  s.pos = from.pos;
  s.logits = from.logits;
  s.held = true;
  ++held_;
  return to;
}

int DecodeBatch::add(std::span<const int> prompt) {
  const ModelConfig& c = model_.config();
  check_append(c, 0, prompt);
  const int id = free_slot();
  Sequence& s = *sequences_[static_cast<size_t>(id)];
  // As InferenceSession::append: one token is a one-row decode step.
  const DecodeRow row{&s.cache, 0, prompt[0]};
  const float* logits = prompt.size() == 1 ? pass_->decode({&row, 1}) : pass_->prefill(s.cache, 0, prompt);
  s.logits.assign(logits, logits + c.vocab_size);
  s.pos = static_cast<int>(prompt.size());
  s.held = true;
  ++held_;
  return id;
}

void DecodeBatch::remove(int id) {
  held(id).held = false;
  --held_;
}

void DecodeBatch::step(std::span<const int> ids, std::span<const int> tokens) {
  check(ids.size() == tokens.size(),
        "DecodeBatch::step: " + std::to_string(ids.size()) + " ids but " + std::to_string(tokens.size()) + " tokens");
  if (ids.empty()) return;
  std::vector<DecodeRow> rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    Sequence& s = held(ids[i]);
    check(std::count(ids.begin(), ids.end(), ids[i]) == 1,
          "DecodeBatch::step: sequence " + std::to_string(ids[i]) + " is named twice");
    check_append(model_.config(), s.pos, tokens.subspan(i, 1));
    rows.push_back({&s.cache, s.pos, tokens[i]});
  }
  const float* logits = pass_->decode(rows);
  const size_t V = static_cast<size_t>(vocab_size());
  for (size_t i = 0; i < ids.size(); ++i) {
    Sequence& s = held(ids[i]);
    std::copy(logits + i * V, logits + (i + 1) * V, s.logits.begin());
    ++s.pos;
  }
}

std::span<const float> DecodeBatch::logits(int id) const { return held(id).logits; }

int DecodeBatch::position(int id) const { return held(id).pos; }

// A Generator's state without its session (generate.cpp).
struct BatchGenerator::State {
  SamplingOptions o;
  Rng rng;
  std::vector<int> seq;
  int drawn = 0;
  bool done = false;
};

BatchGenerator::BatchGenerator(const GPT2<float>& model, InferenceOptions options)
    : model_(model), weights_(options.weights), batch_(model, std::move(options)) {}

BatchGenerator::~BatchGenerator() = default;

int BatchGenerator::add(std::span<const int> prompt, const SamplingOptions& o) {
  check_generation(model_.config(), prompt, o);
  check(o.context == ContextPolicy::stop, "BatchGenerator: a sliding context is not supported; use stop");
  check(o.weights == weights_, std::string("BatchGenerator: the options ask for ") + weight_type_name(o.weights) +
                                   " weights, the batch decodes " + weight_type_name(weights_));
  const int id = batch_.add(prompt);
  if (states_.size() <= static_cast<size_t>(id)) states_.resize(static_cast<size_t>(id) + 1);
  states_[static_cast<size_t>(id)] = std::make_unique<State>(State{o, Rng(o.seed), {prompt.begin(), prompt.end()}});
  states_[static_cast<size_t>(id)]->done = o.max_new_tokens == 0;
  return id;
}

void BatchGenerator::remove(int id) {
  batch_.remove(id);
  states_[static_cast<size_t>(id)].reset();
}

// Generator::advance's test: true when the last drawn token is to be fed;
// otherwise the sequence may have ended (done is set).
bool BatchGenerator::wants_step(int id) const {
  State& s = *states_[static_cast<size_t>(id)];
  if (s.done || s.drawn == 0) return false;
  if (last_token_ends(s.o, s.seq.back(), s.drawn) || batch_.position(id) == model_.config().block_size) s.done = true;
  return !s.done;
}

std::vector<BatchGenerator::Drawn> BatchGenerator::next(std::vector<std::pair<int, std::string>>* failed) {
  std::vector<int> ids, tokens;
  for (size_t id = 0; id < states_.size(); ++id)
    if (states_[id] && wants_step(static_cast<int>(id))) {
      ids.push_back(static_cast<int>(id));
      tokens.push_back(states_[id]->seq.back());
    }
  batch_.step(ids, tokens);
  // The draws, one per sequence, on the step's threads: each sequence has
  // its own options, rng and tokens, so who draws it changes nothing (a
  // draw from 50,257 logits takes ~0.4 ms, a third of a step of 8 if
  // serial; bench/decode_batch_bench).
  std::vector<int> live;
  for (size_t id = 0; id < states_.size(); ++id)
    if (states_[id] && !states_[id]->done) live.push_back(static_cast<int>(id));
  std::vector<int> token(live.size(), -1);
  std::vector<std::string> error(live.size());
  std::vector<std::exception_ptr> other(live.size());  // none may leave the parallel loop
#pragma omp parallel for schedule(dynamic) if (live.size() > 1)
  for (size_t k = 0; k < live.size(); ++k) {
    State* s = states_[static_cast<size_t>(live[k])].get();
    try {
      token[k] = draw_token(batch_.logits(live[k]), s->o, s->rng, s->seq, s->drawn, batch_.position(live[k]));
    } catch (const Error& e) {
      s->done = true;
      error[k] = e.what();
    } catch (...) {
      other[k] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : other)
    if (e) std::rethrow_exception(e);
  std::vector<Drawn> out;
  size_t k = 0;
  for (size_t id = 0; id < states_.size(); ++id) {
    if (!states_[id]) continue;
    const int i = static_cast<int>(id);
    const bool drew = k < live.size() && live[k] == i;
    const size_t at = k;
    if (drew) ++k;
    if (drew && error[at].empty()) {
      out.push_back({i, token[at], batch_.logits(i)});
      continue;
    }
    if (drew) {
      if (!failed) throw Error(error[at]);
      failed->emplace_back(i, error[at]);
    }
    out.push_back({i, std::nullopt, batch_.logits(i)});
  }
  return out;
}

}  // namespace gpt2lab
