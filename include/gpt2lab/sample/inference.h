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
class TeamBarrier;
std::shared_ptr<const DecodeWeights> pack_decode_weights(const GPT2<float>& model, WeightType type);

struct InferenceOptions {
  WeightType weights = WeightType::f32;
  // Packed by pack_decode_weights for this model and type; packed by the
  // session itself when null.
  std::shared_ptr<const DecodeWeights> packed;
};

class InferenceSession {
 public:
  explicit InferenceSession(const GPT2<float>& model, InferenceOptions options = {});

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
  void reserve_rows(int n);
  // append()'s parts, for n new rows: token + position embeddings into x_,
  // one transformer block (filling the caches at pos_), the last row's logits.
  // Matmul `which` of a layer (0 c_attn, 1 attn_proj, 2 c_fc, 3 mlp_proj).
  void embed(std::span<const int> tokens);
  void block(int layer, int n);
  void run(std::span<const int> tokens, bool hidden);  // append()'s work; hidden: append_hidden()'s
  void layers_and_logits(int n, bool hidden);  // every block, then the last row's logits (or every row's final state)
  enum class Epilogue { store, gelu, accumulate };  // out = r, = GELU(r), += r
  void attention(int layer, int n, const float* inp, float* out, Epilogue e);
  void mlp(int layer, int n, const float* inp, float* out, Epilogue e);
  void linear(float* out, const float* inp, int layer, int which, int n, Epilogue e);
  const GPT2<float>& model_;
  InferenceOptions options_;
  int pos_ = 0, rows_ = 0;
  // While a one-row append runs its threads as one team (each thread runs
  // the same calls; matmuls and attention are shared out by thread number,
  // row-wide ops run on thread 0, and the team meets here after each).
  TeamBarrier* team_ = nullptr;
  // The keys and values: each layer's block_size positions in chunks, in a
  // chunk head after head (sample/cached_attention.h). In fp32 with fp32
  // weights, in bf16 with bf16 or int8 weights (half the bytes a decode step
  // reads from the cache; llama.cpp keeps f16 by default). Left
  // uninitialized: a position is written before it is read, and zeroing
  // GPT-2's whole cache up front would fault in every page before the
  // first token. The pages fault in as the context grows, 2 MiB at a time
  // (core/large_array.h).
  struct FreeLarge {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeLarge> k_cache_, v_cache_;
  bool kv_bf16_ = false;
  template <typename T>
  void attend(T* k_cache, T* v_cache, int n);  // n new rows of qkv_ into atty_
  // Scratch that grows to the longest append; huge-page backed like the
  // caches (a 512-token prompt's ~35 MB faulted in 4 KiB at a time took
  // longer than the prompt's GEMMs). Contents are not kept on growth.
  class Buffer {
   public:
    void reserve(size_t n);
    float* data() { return p_.get(); }

   private:
    std::unique_ptr<float, FreeLarge> p_;
    size_t n_ = 0;
  };
  Buffer att_;  // (NH, n, n) probabilities of a batched prefill
  Buffer x_, ln_, mean_, rstd_, qkv_, atty_, scratch_, gelu_;
  Buffer branch_;  // (n, C) a sublayer's output where the placement needs it apart
  std::vector<float> logits_;
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
