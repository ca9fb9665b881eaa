// What a server has done, for `GET /metrics` in Prometheus' text format
// (the counters llama.cpp's server made the convention, under "gpt2lab:"),
// and the one line per finished completion on stderr.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace gpt2lab::serve {

struct ServeStats {
  std::atomic<uint64_t> requests_total{0};      // completions that finished, cancelled ones included
  std::atomic<uint64_t> requests_cancelled{0};  // ... of which the client went away first
  std::atomic<uint64_t> prompt_tokens{0};
  std::atomic<uint64_t> tokens_predicted{0};
  std::atomic<uint64_t> predict_micros{0};      // time spent generating
  std::atomic<int64_t> requests_processing{0};  // running now (decoded together)
  std::atomic<int64_t> requests_deferred{0};    // queued, not started

  std::string prometheus() const;
};

// One completion on the worker: counts it as processing from start to end,
// and on end adds its tokens to the totals and (unless quiet) prints
//   serve: cmpl-ID: 5 prompt + 40 completion tokens in 0.41 s (97.6 tokens/s)
// or "... cancelled by the client after 3 completion tokens".
class CompletionRecord {
 public:
  CompletionRecord(ServeStats& stats, std::string id, bool quiet);
  ~CompletionRecord();
  CompletionRecord(const CompletionRecord&) = delete;
  CompletionRecord& operator=(const CompletionRecord&) = delete;

  void add_tokens(size_t prompt, int completion);
  void cancelled() { cancelled_ = true; }
  // Counts and logs it now (the destructor does, if this was not called):
  // before the reply is released, so that a client that reads /metrics
  // after its reply sees its request counted.
  void finish();

 private:
  ServeStats& stats_;
  std::string id_;
  bool quiet_;
  bool cancelled_ = false, finished_ = false;
  size_t prompt_ = 0;
  uint64_t completion_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace gpt2lab::serve
