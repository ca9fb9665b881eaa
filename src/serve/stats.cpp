#include "serve/stats.h"

#include <cstdio>
#include <utility>

namespace gpt2lab::serve {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  char line[64];
  std::snprintf(line, sizeof line, "%.17g", value);
  out += std::string("# HELP gpt2lab:") + name + " " + help + "\n# TYPE gpt2lab:" + name + " " + type + "\n" +
         "gpt2lab:" + name + " " + line + "\n";
}

}  // namespace

std::string ServeStats::prometheus() const {
  std::string out;
  const auto n = [](const auto& a) { return static_cast<double>(a.load()); };
  metric(out, "requests_total", "counter", "Completions finished, cancelled ones included.", n(requests_total));
  metric(out, "requests_cancelled_total", "counter", "Completions stopped because the client went away.",
         n(requests_cancelled));
  metric(out, "prompt_tokens_total", "counter", "Prompt tokens of finished completions.", n(prompt_tokens));
  metric(out, "tokens_predicted_total", "counter", "Tokens generated.", n(tokens_predicted));
  metric(out, "tokens_predicted_seconds_total", "counter", "Seconds spent generating.", n(predict_micros) / 1e6);
  metric(out, "requests_processing", "gauge", "Completions running now.", n(requests_processing));
  metric(out, "requests_deferred", "gauge", "Completions queued, not started.", n(requests_deferred));
  return out;
}

CompletionRecord::CompletionRecord(ServeStats& stats, std::string id, bool quiet)
    : stats_(stats), id_(std::move(id)), quiet_(quiet) {
  --stats_.requests_deferred;
  ++stats_.requests_processing;
}

void CompletionRecord::add_tokens(size_t prompt, int completion) {
  prompt_ += prompt;
  completion_ += static_cast<uint64_t>(completion);
}

CompletionRecord::~CompletionRecord() { finish(); }

void CompletionRecord::finish() {
  if (finished_) return;
  finished_ = true;
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count();
  stats_.prompt_tokens += prompt_;
  stats_.tokens_predicted += completion_;
  stats_.predict_micros += static_cast<uint64_t>(micros);
  if (cancelled_) ++stats_.requests_cancelled;
  ++stats_.requests_total;
  --stats_.requests_processing;
  if (quiet_) return;
  const double s = static_cast<double>(micros) / 1e6;
  if (cancelled_)
    std::fprintf(stderr, "serve: %s: cancelled by the client after %llu completion tokens (%.2f s)\n", id_.c_str(),
                 static_cast<unsigned long long>(completion_), s);
  else
    std::fprintf(stderr, "serve: %s: %zu prompt + %llu completion tokens in %.2f s (%.1f tokens/s)\n", id_.c_str(),
                 prompt_, static_cast<unsigned long long>(completion_), s,
                 s > 0 ? static_cast<double>(completion_) / s : 0.0);
}

}  // namespace gpt2lab::serve
