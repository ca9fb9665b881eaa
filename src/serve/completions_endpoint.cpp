#include "serve/endpoints.h"  // completions() is declared with the other endpoints

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "serve/client_watch.h"
#include "serve/completion_job.h"

namespace gpt2lab::serve {

using nlohmann::json;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);  // how often a waiting handler looks at its client

ResponseHead response_head(const ServerState& s, const ResponseFormat& f) {
  static std::atomic<uint64_t> counter{std::random_device{}()};
  char id[48];
  std::snprintf(id, sizeof id, "%s%016llx", f.id_prefix(), static_cast<unsigned long long>(counter.fetch_add(1)));
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {id, std::chrono::duration_cast<std::chrono::seconds>(now).count(), s.model.id};
}

class TextCompletionFormat : public ResponseFormat {
 public:
  const char* id_prefix() const override { return "cmpl-"; }
  json whole(const ResponseHead& head, const CompletionRequest& r,
             const std::vector<ChoiceResult>& choices) const override {
    return completion_json(head, r, choices);
  }
  json opening(const ResponseHead& head, const CompletionRequest& r, size_t i) const override {
    return r.echo ? chunk_json(head, i, r.prompt_texts[i / static_cast<size_t>(r.n)], nullptr, "") : json(nullptr);
  }
  json piece(const ResponseHead& head, size_t i, const ChoicePiece& piece) const override {
    return chunk_json(head, i, piece.text, piece.logprobs, "");
  }
  json closing(const ResponseHead& head, size_t i, const std::string& rest,
               const std::string& finish_reason) const override {
    return chunk_json(head, i, rest, nullptr, finish_reason);
  }
  json usage_event(const ResponseHead& head, const CompletionRequest& r, int completion_tokens) const override {
    json last = chunk_json(head, 0, "", nullptr, "");
    last["choices"] = json::array();
    last["usage"] = usage_json(r, completion_tokens);
    return last;
  }
};

// True while the client is still there; the worker looks before each token,
// so that a client that hangs up stops its generation at once. (`cancel`
// is read first: once it is set, the handler may have returned and the
// socket be another connection's.)
bool still_wanted(std::atomic<bool>& cancel, const ClientWatch& watch) {
  if (!cancel && watch.gone()) cancel = true;
  return !cancel;
}

// The prompt's tokens count once per prompt, not once per choice (as usage does).
void count(CompletionRecord& rec, const CompletionRequest& r, size_t i, const ChoiceResult& c) {
  rec.add_tokens(i % static_cast<size_t>(r.n) == 0 ? r.prompts[i / static_cast<size_t>(r.n)].size() : 0,
                 c.completion_tokens);
}

void run_whole(const ServerState& s, const CompletionRequest& r, const ResponseFormat& f, const ResponseHead& head,
               Pending& p, const ClientWatch& watch, CompletionRecord& rec) {
  int status = 200;
  json body;
  try {
    std::vector<ChoiceResult> results;
    for (size_t i = 0; i < r.choices() && !p.cancel; ++i) {
      results.push_back(run_choice(s.model, r, i / static_cast<size_t>(r.n), static_cast<int>(i % r.n),
                                   [&](const ChoicePiece&) { return still_wanted(p.cancel, watch); }));
      count(rec, r, i, results.back());
    }
    body = f.whole(head, r, results);
  } catch (const std::exception& e) {
    status = 500;
    body = error_json("server_error", std::string("generation failed: ") + e.what());
  }
  if (p.cancel) rec.cancelled();
  rec.finish();
  p.finish(status, std::move(body));
}

void complete_whole(ServerState& s, std::shared_ptr<const CompletionRequest> r, std::shared_ptr<const ResponseFormat> f,
                    const ResponseHead& head, const ClientWatch& watch, httplib::Response& res) {
  ++s.stats.requests_deferred;
  const auto job = [&s, r = std::move(r), f = std::move(f), head, watch](Pending& p) {
    CompletionRecord rec(s.stats, head.id, s.options.quiet);
    if (!p.cancel) run_whole(s, *r, *f, head, p, watch, rec);
    if (p.cancel) rec.cancelled();
  };
  if (!run_and_wait(s, watch, std::make_shared<Pending>(), job, res)) {
    --s.stats.requests_deferred;
    send_busy(s, res);
  }
}

// A streamed completion: the worker queues server-sent events, the
// connection's thread writes them as they come.
struct Events {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::string> queue;
  bool done = false;
  std::atomic<bool> cancel{false};

  void push(const json& data) {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back("data: " + dumped(data) + "\n\n");
    ready.notify_all();
  }
};

void run_streamed(const ServerState& s, const CompletionRequest& r, const ResponseFormat& f, const ResponseHead& head,
                  Events& ev, const ClientWatch& watch, CompletionRecord& rec) {
  try {
    int tokens = 0;
    for (size_t i = 0; i < r.choices() && !ev.cancel; ++i) {
      size_t sent = 0;
      if (const json first = f.opening(head, r, i); !first.is_null()) ev.push(first);
      const auto on_piece = [&](const ChoicePiece& piece) {
        if (!piece.text.empty() || !piece.logprobs.is_null()) ev.push(f.piece(head, i, piece));
        sent += piece.text.size();
        return still_wanted(ev.cancel, watch);
      };
      const ChoiceResult c = run_choice(s.model, r, i / static_cast<size_t>(r.n), static_cast<int>(i % r.n), on_piece);
      count(rec, r, i, c);
      tokens += c.completion_tokens;
      const size_t before = (r.echo ? r.prompt_texts[i / static_cast<size_t>(r.n)].size() : 0) + sent;
      ev.push(f.closing(head, i, c.text.substr(before), c.finish_reason));
    }
    if (r.include_usage) ev.push(f.usage_event(head, r, tokens));
  } catch (const std::exception& e) {
    ev.push(error_json("server_error", std::string("generation failed: ") + e.what()));
  }
  if (ev.cancel) rec.cancelled();
  rec.finish();
  std::lock_guard<std::mutex> lock(ev.mutex);
  ev.done = true;
  ev.ready.notify_all();
}

// Writes the events as they come; false (the connection is dropped) once
// the client has gone.
bool write_events(Events& ev, const ClientWatch& watch, httplib::DataSink& sink) {
  for (;;) {
    std::deque<std::string> batch;
    bool finished = false;
    {
      std::unique_lock<std::mutex> lock(ev.mutex);
      ev.ready.wait_for(lock, kPoll, [&] { return !ev.queue.empty() || ev.done; });
      batch.swap(ev.queue);
      finished = ev.done;
    }
    for (const std::string& e : batch) {
      if (sink.write(e.data(), e.size())) continue;
      ev.cancel = true;
      return false;
    }
    if (finished) {
      const std::string end = "data: [DONE]\n\n";
      sink.write(end.data(), end.size());
      sink.done();
      return true;
    }
    if (watch.gone()) {
      ev.cancel = true;
      return false;
    }
  }
}

void complete_streamed(ServerState& s, std::shared_ptr<const CompletionRequest> r,
                       std::shared_ptr<const ResponseFormat> f, const ResponseHead& head, const ClientWatch& watch,
                       httplib::Response& res) {
  auto ev = std::make_shared<Events>();
  ++s.stats.requests_deferred;
  const bool queued = s.scheduler->submit([&s, r = std::move(r), f = std::move(f), head, ev, watch] {
    CompletionRecord rec(s.stats, head.id, s.options.quiet);
    if (!ev->cancel) {
      run_streamed(s, *r, *f, head, *ev, watch, rec);
    } else {
      std::lock_guard<std::mutex> lock(ev->mutex);
      ev->done = true;
    }
    if (ev->cancel) rec.cancelled();
  });
  if (!queued) {
    --s.stats.requests_deferred;
    send_busy(s, res);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [ev, watch](size_t, httplib::DataSink& sink) { return write_events(*ev, watch, sink); },
      [ev](bool) { ev->cancel = true; });
}

void complete(ServerState& s, const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  RequestProblem problem;
  std::shared_ptr<const CompletionRequest> r;
  try {
    r = std::make_shared<const CompletionRequest>(
        read_completion_request(body, s.model.model.config(), s.model.tok, s.base, s.limits, problem));
  } catch (const Error& e) {
    send_error(res, 400, "invalid_request_error", e.what(), problem.param, problem.code);
    return;
  }
  answer_completion(s, r, text_completion_format(), req, res);
}

}  // namespace

std::shared_ptr<const ResponseFormat> text_completion_format() {
  static const auto format = std::make_shared<const TextCompletionFormat>();
  return format;
}

void answer_completion(ServerState& s, std::shared_ptr<const CompletionRequest> r,
                       std::shared_ptr<const ResponseFormat> f, const httplib::Request& req, httplib::Response& res) {
  const ClientWatch watch(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  const ResponseHead head = response_head(s, *f);
  if (r->stream)
    complete_streamed(s, std::move(r), std::move(f), head, watch, res);
  else
    complete_whole(s, std::move(r), std::move(f), head, watch, res);
}

void Pending::finish(int result_status, json result) {
  std::lock_guard<std::mutex> lock(mutex);
  status = result_status;
  body = std::move(result);
  done = true;
  ready.notify_all();
}

bool run_and_wait(ServerState& s, const ClientWatch& watch, const std::shared_ptr<Pending>& p,
                  std::function<void(Pending&)> job, httplib::Response& res) {
  if (!s.scheduler->submit([p, job = std::move(job)] { job(*p); })) return false;
  std::unique_lock<std::mutex> lock(p->mutex);
  while (!p->ready.wait_for(lock, kPoll, [&] { return p->done; })) {
    if (watch.gone()) {
      p->cancel = true;
      return true;
    }
  }
  res.status = p->status;
  send_json(res, p->body);
  return true;
}

void send_busy(const ServerState& s, httplib::Response& res) {
  send_error(res, 429, "rate_limit_error",
             "the server is busy: " + std::to_string(s.options.max_requests) +
                 " completions are queued or running (--max-requests); retry later",
             "", "server_busy");
}

void completions(ServerState& s, const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& reader) {
  complete(s, req, res, reader);
}

}  // namespace gpt2lab::serve
