// A request's work run on the server's one worker (serve/scheduler.h) and
// its answer: the completion machinery of /v1/completions, shared with
// /v1/chat/completions (which writes the same choices in its own JSON) and
// /v1/embeddings (one job answered whole).
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/client_watch.h"
#include "serve/completion.h"
#include "serve/completion_request.h"

namespace gpt2lab::serve {

struct ServerState;

// How a completion's choices are written: /v1/completions' text_completion
// objects, or chat's chat.completion ones.
class ResponseFormat {
 public:
  virtual ~ResponseFormat() = default;
  virtual const char* id_prefix() const = 0;  // "cmpl-"
  // The whole response (choices[i]: prompt i / n, seed + i % n).
  virtual nlohmann::json whole(const ResponseHead& head, const CompletionRequest& r,
                               const std::vector<ChoiceResult>& choices) const = 0;
  // A stream's events of choice i: its first (null: none), one per drawn
  // piece, and its last with the text held back and the finish reason.
  virtual nlohmann::json opening(const ResponseHead& head, const CompletionRequest& r, size_t i) const = 0;
  virtual nlohmann::json piece(const ResponseHead& head, size_t i, const ChoicePiece& piece) const = 0;
  virtual nlohmann::json closing(const ResponseHead& head, size_t i, const std::string& rest,
                                 const std::string& finish_reason) const = 0;
  // The event after every choice's with stream_options.include_usage.
  virtual nlohmann::json usage_event(const ResponseHead& head, const CompletionRequest& r,
                                     int completion_tokens) const = 0;
};

// /v1/completions' format.
std::shared_ptr<const ResponseFormat> text_completion_format();

// Queues `r` for the worker and answers it, whole or streamed (r->stream),
// in format `f`. 429 when the queue is full.
void answer_completion(ServerState& s, std::shared_ptr<const CompletionRequest> r,
                       std::shared_ptr<const ResponseFormat> f, const httplib::Request& req, httplib::Response& res);

// A job answered in one response: the handler waits for the worker, and
// gives up (setting `cancel`) once the client has gone away.
struct Pending {
  std::mutex mutex;
  std::condition_variable ready;
  bool done = false;
  int status = 200;
  nlohmann::json body;
  std::atomic<bool> cancel{false};

  void finish(int status, nlohmann::json body);
};

// Queues job(p) for the worker and waits until it calls p.finish(), then
// sends its answer; returns at once, leaving p.cancel set, when the client
// goes away first, and false (nothing sent) when the queue is full.
bool run_and_wait(ServerState& s, const ClientWatch& watch, const std::shared_ptr<Pending>& p,
                  std::function<void(Pending&)> job, httplib::Response& res);

// The 429 of a full queue.
void send_busy(const ServerState& s, httplib::Response& res);

}  // namespace gpt2lab::serve
