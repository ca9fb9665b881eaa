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
#include "serve/scheduler.h"

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

// Waits for p's answer and sends it; returns at once, setting p.cancel,
// once the client has gone away.
void wait_and_send(const ClientWatch& watch, Pending& p, httplib::Response& res) {
  std::unique_lock<std::mutex> lock(p.mutex);
  while (!p.ready.wait_for(lock, kPoll, [&] { return p.done; })) {
    if (watch.gone()) {
      p.cancel = true;
      return;
    }
  }
  res.status = p.status;
  send_json(res, p.body);
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

// A request's choices as the scheduler runs them, side by side, answered
// in one response (pending) or streamed (events) as they come: a stream's
// events of different choices interleave (each names its index).
class CompletionJob : public Job {
 public:
  CompletionJob(ServerState& s, std::shared_ptr<const CompletionRequest> r, std::shared_ptr<const ResponseFormat> f,
                ResponseHead head, ClientWatch watch, std::shared_ptr<Pending> pending, std::shared_ptr<Events> events)
      : s_(s),
        r_(std::move(r)),
        f_(std::move(f)),
        head_(std::move(head)),
        watch_(watch),
        pending_(std::move(pending)),
        events_(std::move(events)),
        results_(r_->choices()),
        sent_(r_->choices(), 0) {
    for (size_t i = 0; i < r_->choices(); ++i)
      runs_.push_back(std::make_unique<ChoiceRun>(s.model, *r_, prompt_of(i), static_cast<int>(i % r_->n)));
  }
  size_t choices() const override { return r_->choices(); }
  std::span<const int> prompt(size_t i) const override { return runs_[i]->prompt(); }
  SamplingOptions options(size_t i) const override { return runs_[i]->options(); }
  bool cancelled() const override { return cancel_flag() || !error_.empty(); }
  void started(size_t i) override {
    record();
    if (!events_) return;
    if (const json first = f_->opening(head_, *r_, i); !first.is_null()) events_->push(first);
  }
  bool token(size_t i, const GenerationStep& step) override {
    ChoicePiece piece;
    const bool more = runs_[i]->step(step, piece);
    if (events_ && (!piece.text.empty() || !piece.logprobs.is_null())) events_->push(f_->piece(head_, i, piece));
    sent_[i] += piece.text.size();
    return still_wanted(cancel_flag(), watch_) && more;
  }
  void ended(size_t i, const std::string& error) override;
  void finished() override;

 private:
  size_t prompt_of(size_t i) const { return i / static_cast<size_t>(r_->n); }
  std::atomic<bool>& cancel_flag() const { return pending_ ? pending_->cancel : events_->cancel; }
  void record() {
    if (!rec_) rec_ = std::make_unique<CompletionRecord>(s_.stats, head_.id, s_.options.quiet);
  }
  ServerState& s_;
  std::shared_ptr<const CompletionRequest> r_;
  std::shared_ptr<const ResponseFormat> f_;
  ResponseHead head_;
  ClientWatch watch_;
  std::shared_ptr<Pending> pending_;
  std::shared_ptr<Events> events_;
  std::vector<std::unique_ptr<ChoiceRun>> runs_;
  std::vector<ChoiceResult> results_;
  std::vector<size_t> sent_;  // streamed text bytes of each choice
  std::unique_ptr<CompletionRecord> rec_;
  std::string error_;  // the first failure's
  int tokens_ = 0;
};

void CompletionJob::ended(size_t i, const std::string& error) {
  if (!error.empty()) {
    if (error_.empty()) error_ = error;
    return;
  }
  results_[i] = runs_[i]->finish();
  count(*rec_, *r_, i, results_[i]);
  tokens_ += results_[i].completion_tokens;
  if (!events_) return;
  const size_t before = (r_->echo ? r_->prompt_texts[prompt_of(i)].size() : 0) + sent_[i];
  events_->push(f_->closing(head_, i, results_[i].text.substr(before), results_[i].finish_reason));
}

void CompletionJob::finished() {
  record();
  if (cancel_flag()) rec_->cancelled();
  rec_->finish();
  const json failure = error_.empty() ? json(nullptr) : error_json("server_error", "generation failed: " + error_);
  if (pending_) {
    pending_->finish(error_.empty() ? 200 : 500, error_.empty() ? f_->whole(head_, *r_, results_) : failure);
    return;
  }
  if (!error_.empty())
    events_->push(failure);
  else if (r_->include_usage && !cancel_flag())
    events_->push(f_->usage_event(head_, *r_, tokens_));
  std::lock_guard<std::mutex> lock(events_->mutex);
  events_->done = true;
  events_->ready.notify_all();
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

// A completion answered in one response: the handler waits for the
// worker, and gives up (the choices then stop at their next token) once
// the client has gone away.
void complete_whole(ServerState& s, std::shared_ptr<const CompletionRequest> r, std::shared_ptr<const ResponseFormat> f,
                    const ResponseHead& head, const ClientWatch& watch, httplib::Response& res) {
  auto p = std::make_shared<Pending>();
  ++s.stats.requests_deferred;
  if (!s.scheduler->submit(std::make_shared<CompletionJob>(s, std::move(r), std::move(f), head, watch, p, nullptr))) {
    --s.stats.requests_deferred;
    send_busy(s, res);
    return;
  }
  wait_and_send(watch, *p, res);
}

void complete_streamed(ServerState& s, std::shared_ptr<const CompletionRequest> r,
                       std::shared_ptr<const ResponseFormat> f, const ResponseHead& head, const ClientWatch& watch,
                       httplib::Response& res) {
  auto ev = std::make_shared<Events>();
  ++s.stats.requests_deferred;
  const bool queued =
      s.scheduler->submit(std::make_shared<CompletionJob>(s, std::move(r), std::move(f), head, watch, nullptr, ev));
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
  wait_and_send(watch, *p, res);
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
