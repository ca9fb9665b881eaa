// Incremental inference with a key/value cache.
//
// append() runs the model on new tokens at the next positions, storing each
// layer's keys and values, so a prompt is processed in one batched pass
// (prefill) and every generated token costs one row of work (decode). The
// logits of the last appended position are returned. Matches GPT2::forward
// at every position (tests/sample/inference_test.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/model/weight_type.h"

namespace gpt2lab {

// Decode steps read the matmul weights in a WeightType (model/weight_type.h)
// from a copy laid out for streaming (model/packed_matvec.h), kept beside
// the model's own weights whatever the type. With bf16 and int8 the
// prompt's matmuls (prefill) run with bf16 inputs and fp32 accumulation.
//
// A model's weights packed for decoding, shareable (read-only) among the
// sessions of that model, e.g. one session per thread.
class DecodeWeights;
std::shared_ptr<const DecodeWeights> pack_decode_weights(const GPT2<float>& model, WeightType type);

struct InferenceOptions {
  WeightType weights = WeightType::f32;
  // Packed by pack_decode_weights for this model and type; packed by the
  // session itself when null.
  std::shared_ptr<const DecodeWeights> packed;
};

class ForwardPass;
class KvCache;

class InferenceSession {
 public:
  explicit InferenceSession(const GPT2<float>& model, InferenceOptions options = {});
  ~InferenceSession();
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  // Appends tokens (position() + n <= block_size, n >= 1); returns the
  // logits (padded_vocab_size floats, the first vocab_size meaningful) of the
  // last one.
  const float* append(std::span<const int> tokens);
  // append() that returns, instead of the last logits, the final hidden
  // state of every appended token: the LM head's input (ln_f's output; the
  // last block's output for a model without a final norm), tokens.size()
  // rows of n_embd floats, valid until the next call.
  const float* append_hidden(std::span<const int> tokens);
  int position() const { return pos_; }
  int vocab_size() const { return model_.config().vocab_size; }
  void reset() { pos_ = 0; }

 private:
  const float* run(std::span<const int> tokens, bool hidden);
  const GPT2<float>& model_;
  int pos_ = 0;
  // The forward (sample/forward_pass.h): a one-token append is a decode
  // step of one row, the one code path DecodeBatch (decode_batch.h) runs
  // for several sequences. The keys and values (sample/kv_cache.h): in
  // fp32 with fp32 weights, in bf16 with bf16 or int8 weights.
  std::unique_ptr<ForwardPass> pass_;
  std::unique_ptr<KvCache> cache_;
};

// The final hidden state of each token of one sequence (1 to block_size
// tokens from position 0), as append_hidden() gives it: tokens.size() rows
// of n_embd floats, row-major. Pass options.packed to share packed weights
// among calls (packing copies the matmul weights).
std::vector<float> final_hidden_states(const GPT2<float>& model, std::span<const int> tokens,
                                       InferenceOptions options = {});

// The mean next-token cross-entropy (nats) of B rows of T tokens, each row
// fed one token at a time from an empty cache, so every logit comes out of
// a decode step: the loss the model has as decoding sees it (e.g. with
// int8 weights), for `gpt2lab eval --weights`. Targets of -1 are skipped.
double decoding_loss(InferenceSession& session, const int* inputs, const int* targets, int B, int T);

}  // namespace gpt2lab
