// The model's forward over new tokens against key/value caches: a prompt of
// one sequence (prefill: GEMMs on the model's own weights, the last row's
// logits), or one token for each of several sequences, each at its own
// position in its own cache (decode: one product per matmul over the packed
// weights, each weight block read once for all rows, every row's logits).
// A decode row's result does not depend on the other rows: each row's sums
// are taken in the same order whatever the batch (model/packed_matvec.h),
// its norms and attention are its own. InferenceSession and DecodeBatch
// (gpt2lab/sample/{inference,decode_batch}.h) are its two users.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "gpt2lab/sample/inference.h"
#include "sample/decode_weights.h"
#include "sample/kv_cache.h"

namespace gpt2lab {

class TeamBarrier;

// One decode row: `token` at position `pos` of the sequence whose cache is `cache`.
struct DecodeRow {
  KvCache* cache;
  int pos;
  int token;
};

// Throws Error unless tokens (n >= 1, ids in the vocabulary) fit at
// positions pos.. of the context.
void check_append(const ModelConfig& c, int pos, std::span<const int> tokens);

class ForwardPass {
 public:
  ForwardPass(const GPT2<float>& model, InferenceOptions options);
  ~ForwardPass();
  const GPT2<float>& model() const { return model_; }
  bool kv_bf16() const { return options_.weights != WeightType::f32; }

  // tokens (n >= 2, checked by the caller) at positions pos..pos+n-1 of
  // `cache`: the last one's logits (vocab_size floats), or with `hidden`
  // every row's final hidden state (n rows of n_embd: the LM head's input).
  const float* prefill(KvCache& cache, int pos, std::span<const int> tokens, bool hidden = false);
  // One token per row (rows of distinct caches): the rows' logits, row i at
  // i * vocab_size (or their final hidden states, as prefill's).
  const float* decode(std::span<const DecodeRow> rows, bool hidden = false);

 private:
  // Prompts of up to this many tokens, with bf16 or int8 weights, take the
  // decode step's products on the packed weights: one pass over them from
  // memory (the rows share each block while it is in L2), where the bf16
  // GEMM first rounds every weight. 124M, 2 threads, ms packed vs GEMM
  // (bench/decode_batch_bench, 2026-12-04, after bf16 dot products): bf16
  // 32 tokens 12.6-14.9 vs 33.2-33.5, 128: 41-44 vs 62, 256: 81-87 vs
  // 105-107; int8 128: 56 vs 60, 256: 113-117 vs 98-99. With f32 weights
  // the GEMM is as fast from 6 tokens and faster at 16.
  static constexpr int kPackedPromptRows = 128;
  enum class Epilogue { store, gelu, accumulate };  // out = r, = GELU(r), += r
  void reserve_rows(int n);
  void embed_row(int i, int token, int pos);
  const float* output();  // the logits, or the hidden states
  void run(int n);        // the layers and the logits, in a decode team when decoding
  void layers_and_logits(int n);
  void block(int layer, int n);
  void attention(int layer, int n, const float* inp, float* out, Epilogue e);
  void mlp(int layer, int n, const float* inp, float* out, Epilogue e);
  void linear(float* out, const float* inp, int layer, int which, int n, Epilogue e);
  template <typename T>
  void attend_prefill(int layer, int n);
  template <typename T>
  void attend_decode(int layer, int n);
  int part() const;
  int parts() const;
  void wait() const;  // the decode team meets (a no-op alone)

  const GPT2<float>& model_;
  InferenceOptions options_;
  int rows_ = 0;
  // The call's rows: decode_ (decoding) or cache_ from pos_ (prefill).
  std::span<const DecodeRow> decode_;
  KvCache* cache_ = nullptr;
  int pos_ = 0;
  bool hidden_ = false;  // the final hidden states, no logits
  // While a decode step runs its threads as one team (each thread runs
  // the same calls; matmuls and attention are shared out by thread number,
  // row-wide ops run on thread 0, and the team meets here after each).
  TeamBarrier* team_ = nullptr;
  // Scratch that grows to the longest call; huge-page backed like the
  // caches (a 512-token prompt's ~35 MB faulted in 4 KiB at a time took
  // longer than the prompt's GEMMs). Contents are not kept on growth.
  class Buffer {
   public:
    void reserve(size_t n);
    float* data() { return p_.get(); }

   private:
    struct Free {
      void operator()(float* p) const;
    };
    std::unique_ptr<float, Free> p_;
    size_t n_ = 0;
  };
  Buffer att_;  // (NH, n, n) probabilities of a batched prefill
  Buffer x_, ln_, mean_, rstd_, qkv_, atty_, scratch_, gelu_;
  Buffer branch_;  // (n, C) a sublayer's output where the placement needs it apart
  std::vector<float> logits_;
};

}  // namespace gpt2lab
