// `gpt2lab serve`: one model behind OpenAI-style HTTP endpoints, as
// llama.cpp's server made the convention (docs/serve.md):
//   POST /v1/completions   (and /completions)  text completions, streamed with stream: true
//   POST /v1/chat/completions (and /chat/completions)  chat, through a chat template
//   POST /v1/embeddings    (and /embeddings)   mean-pooled final hidden states
//   GET  /v1/models        (and /models)       the one model
//   GET  /v1/models/{id}   (and /models/{id})  it, or a 404 for another id
//   GET  /health                               {"status": "ok"}, no key needed
//   POST /tokenize, /detokenize                text <-> token ids
//   GET  /metrics                              Prometheus counters (serve/stats.h)
// Completions run one at a time in arrival order (serve/scheduler.h); every
// error is OpenAI's JSON {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <cstddef>
#include <string>

#include "gpt2lab/model/weight_type.h"

namespace gpt2lab::serve {

struct ServeOptions {
  std::string model_dir;
  std::string tokenizer;      // "" = the checkpoint's own
  std::string model_id;       // "" = the model folder's name
  std::string chat_template;  // "" = MODEL_DIR/chat_template.json if there is one, else the default
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port (printed)
  int threads = 0;  // of the kernels; 0 = all cores
  WeightType weights = WeightType::f32;
  std::string api_key;              // "" = none; else "Authorization: Bearer KEY" on every endpoint but /health
                                    // (printable ASCII without spaces: check_api_key)
  size_t max_requests = 8;          // completions queued or running; more get 429
  size_t max_body_bytes = 1 << 20;  // a request body (decompressed); more gets 413
  size_t max_choices = 16;          // prompts x n of one request
  int timeout_s = 10;               // each read and write on a connection
  int request_timeout_s = 30;       // a whole request (line, headers, body) arrives within this; else 408
  bool quiet = false;               // no line per request on stderr
};

// Throws Error unless `key` can be sent as "Authorization: Bearer KEY":
// not empty, printable ASCII, no spaces (`--api-key "$KEY"` with KEY unset
// gives "", which must not turn authentication off).
void check_api_key(const std::string& key);

// Loads the model, listens, prints "gpt2lab serve: listening on
// http://HOST:PORT" on stdout, and serves until SIGINT or SIGTERM; then
// stops accepting, finishes the requests it has, and returns (a second
// signal ends the process at once). Throws Error when it cannot start.
void serve(const ServeOptions& o);

}  // namespace gpt2lab::serve
