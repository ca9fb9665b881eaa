// An OpenAI-style /v1/embeddings request, read and checked before it is
// queued: the inputs (a string, a list of strings, a list of token ids, or
// a list of such lists) tokenized and each within the model's context, the
// encoding and the dimensions. Errors name the field and the input's index.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/model/config.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "serve/completion_request.h"

namespace gpt2lab::serve {

// At most this many inputs in one request (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
  std::vector<std::vector<int>> inputs;  // token ids, each 1 to block_size of them
  bool base64 = false;                   // encoding_format "base64": little-endian float32s
};

EmbeddingRequest read_embedding_request(const nlohmann::json& body, const ModelConfig& c, const Tokenizer& tok,
                                        RequestProblem& problem);

// The embedding of one input from its final hidden states (rows of n_embd
// floats, one per token): their mean, scaled to unit length (as OpenAI's
// are, so that a dot product is the cosine similarity).
std::vector<float> pool_embedding(const float* hidden, size_t tokens, int n_embd);

// `v` as encoding_format "base64" sends it: its float32s little-endian, in base64.
std::string base64_floats(const std::vector<float>& v);

}  // namespace gpt2lab::serve
