// What the /v1/completions reader tests share: a byte-level tokenizer (the
// id of a character is its byte; no merges) and a one-layer model config
// with a context of 32 to read requests against.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/completion_request.h"

namespace gpt2lab::serve::test {

// Every byte a token, and the end of text (13 bytes, the longest token).
inline Tokenizer byte_tokenizer() {
  std::vector<std::string> tokens;
  tokens.reserve(257);
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back(Tokenizer::kEndOfText);
  return Tokenizer::from_vocab(std::move(tokens), {}, "bytes");
}

struct RequestReader {
  Tokenizer tok = byte_tokenizer();
  ModelConfig c = make_config(1, 2, 16, 32, 257, NormPlacement::pre, InitScheme::gpt2);  // context 32
  RequestProblem problem;

  CompletionRequest read_body(const nlohmann::json& body, size_t max_choices = 16) {
    return read_completion_request(body, c, tok, SamplingOptions{}, RequestLimits{max_choices}, problem);
  }
};

}  // namespace gpt2lab::serve::test
