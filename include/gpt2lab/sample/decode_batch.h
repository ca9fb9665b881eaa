// Several sequences decoded together: one forward step appends a token to
// each of B sequences at once, each at its own position in its own
// key/value cache, so a step reads the matmul weights once for all B
// instead of once per sequence (decoding is bound by the bytes read).
// Sequences join (after their own prompt's prefill) and leave between
// steps. A sequence's logits are the same, bit for bit, as an
// InferenceSession's (inference.h) for the same tokens, whatever the other
// sequences in the batch: the one-token append of a session is the
// one-row case of the same step (tests/sample/decode_batch_test.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gpt2lab/core/rng.h"
#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"

namespace gpt2lab {

class ForwardPass;

class DecodeBatch {
 public:
  explicit DecodeBatch(const GPT2<float>& model, InferenceOptions options = {});
  ~DecodeBatch();
  DecodeBatch(const DecodeBatch&) = delete;
  DecodeBatch& operator=(const DecodeBatch&) = delete;

  // A new sequence with `prompt` (1..block_size ids in the vocabulary)
  // prefilled, alone; returns its id (a removed sequence's id and cache
  // may be reused). Throws Error as InferenceSession::append does.
  int add(std::span<const int> prompt);
  // A new sequence that continues held sequence `id` (a copy of its cache,
  // position and logits): beam search's branch. Returns the new id.
  int fork(int id);
  // Ends sequence `id`; its cache is kept for a later add.
  void remove(int id);
  // One step: tokens[i] appended to sequence ids[i] (distinct held ids,
  // each with room in its context), all in one forward. Checked first.
  void step(std::span<const int> ids, std::span<const int> tokens);
  // The logits (vocab_size floats) of sequence id's last token, valid until
  // its next step or removal.
  std::span<const float> logits(int id) const;
  int position(int id) const;
  int size() const { return held_; }  // sequences held
  int vocab_size() const { return model_.config().vocab_size; }
  int context_size() const { return model_.config().block_size; }

 private:
  struct Sequence;
  Sequence& held(int id) const;
  int free_slot();  // an unheld sequence, new if none
  const GPT2<float>& model_;
  std::unique_ptr<ForwardPass> pass_;
  std::vector<std::unique_ptr<Sequence>> sequences_;  // by id; free ones kept for reuse
  int held_ = 0;
};

// Generations decoded together in a DecodeBatch: each sequence draws the
// tokens a Generator (generate.h) with the same prompt and options draws.
// Options with ContextPolicy::slide are refused (a slide re-encodes one
// sequence's window; the server, its user, stops at a full context).
class BatchGenerator {
 public:
  // options: the weights every sequence's SamplingOptions name.
  BatchGenerator(const GPT2<float>& model, InferenceOptions options);
  ~BatchGenerator();

  // Checks as Generator does, prefills, and returns the sequence's id.
  int add(std::span<const int> prompt, const SamplingOptions& o);
  void remove(int id);
  int size() const { return batch_.size(); }

  struct Drawn {
    int id;
    std::optional<int> token;       // none: the sequence has ended (remove it)
    std::span<const float> logits;  // what token was drawn from (vocab_size)
  };
  // The next token of every held sequence that has not ended: one decode
  // step for those past their first token, then each one's draw. A
  // sequence whose draw throws (non-finite logits) is reported in
  // `failed` with the error's text and draws nothing more.
  std::vector<Drawn> next(std::vector<std::pair<int, std::string>>* failed = nullptr);

 private:
  struct State;
  bool wants_step(int id) const;
  const GPT2<float>& model_;
  WeightType weights_;
  DecodeBatch batch_;
  std::vector<std::unique_ptr<State>> states_;  // by the batch's ids
};

}  // namespace gpt2lab
