// Continuous batching: one worker thread decodes every running completion
// choice together, one token of each per step (sample/decode_batch.h: a
// step reads the weights once for all), up to `parallel` sequences at
// once. Between steps it admits waiting choices in arrival order (each
// prefilled alone, then joining the batch) and lets finished ones go, so a
// short request does not wait for a long one. A sequence draws the tokens
// it draws alone, whatever runs beside it. HTTP threads queue jobs here
// and wait; the accept loop never does. At most `capacity` jobs (requests)
// are queued or running; a full queue refuses at once (the client gets 429).
// A task without choices (an embeddings request) runs alone between steps.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/sample/decode_batch.h"
#include "gpt2lab/sample/generate.h"

namespace gpt2lab::serve {

// One request's choices, as the worker runs them. Every call but
// cancelled() comes from the worker thread.
class Job {
 public:
  virtual ~Job() = default;
  virtual size_t choices() const = 0;
  virtual std::span<const int> prompt(size_t choice) const = 0;
  virtual SamplingOptions options(size_t choice) const = 0;
  // No more of its choices are to start (the client went away, one failed).
  virtual bool cancelled() const = 0;
  // Choice `choice` joins the batch (prefilled).
  virtual void started(size_t choice) = 0;
  // A token of the choice; false ends it (a stop string, the client gone).
  virtual bool token(size_t choice, const GenerationStep& step) = 0;
  // The choice has ended; `error` is empty unless it failed.
  virtual void ended(size_t choice, const std::string& error) = 0;
  // Every choice that started has ended, and no more will start.
  virtual void finished() = 0;
};

class Scheduler {
 public:
  // `threads`: the OpenMP threads of the worker (a per-thread setting);
  // `parallel`: the most sequences decoded together.
  Scheduler(const GPT2<float>& model, InferenceOptions weights, size_t capacity, size_t parallel, int threads);
  // Runs what is queued, then ends the worker.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `job` unless `capacity` jobs are queued or running: false then.
  bool submit(std::shared_ptr<Job> job);
  // The same for a task without choices (an embedding's forward): run on
  // the worker in its turn, alone, between two steps.
  bool submit(std::function<void()> task);

 private:
  struct Queued {
    std::shared_ptr<Job> job;
    size_t next = 0;     // its first choice not yet started
    size_t running = 0;  // started and not ended
    bool retired = false;
  };
  struct Running {
    std::shared_ptr<Queued> job;
    size_t choice;
  };
  void work(int threads);
  bool admit_one(BatchGenerator& gen);  // false: nothing waits
  void step(BatchGenerator& gen);
  void end(BatchGenerator& gen, int id, const std::string& error);
  void retire(Queued& q);  // finished() once nothing more of it runs or starts
  const GPT2<float>& model_;
  InferenceOptions weights_;
  const size_t capacity_, parallel_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Queued>> queue_;  // with choices not yet started
  size_t admitted_ = 0;                        // queued + running
  bool closing_ = false;
  std::map<int, Running> running_;  // by sequence id; the worker's alone
  std::thread worker_;
};

}  // namespace gpt2lab::serve
