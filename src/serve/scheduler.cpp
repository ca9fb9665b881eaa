#include "serve/scheduler.h"

#include <algorithm>
#include <exception>
#include <vector>

#include "core/threads.h"

namespace gpt2lab::serve {

Scheduler::Scheduler(const GPT2<float>& model, InferenceOptions weights, size_t capacity, size_t parallel, int threads)
    : model_(model),
      weights_(std::move(weights)),
      capacity_(capacity),
      parallel_(std::max<size_t>(parallel, 1)),
      worker_([this, threads] { work(threads); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (admitted_ >= capacity_ || closing_) return false;
    ++admitted_;
    queue_.push_back(std::make_shared<Queued>(Queued{std::move(job)}));
  }
  wake_.notify_one();
  return true;
}

namespace {

// A job of no choices: the scheduler retires it on reaching it, and
// retiring runs it.
class Task : public Job {
 public:
  explicit Task(std::function<void()> f) : f_(std::move(f)) {}
  size_t choices() const override { return 0; }
  std::span<const int> prompt(size_t) const override { return {}; }
  SamplingOptions options(size_t) const override { return {}; }
  bool cancelled() const override { return false; }
  void started(size_t) override {}
  bool token(size_t, const GenerationStep&) override { return false; }
  void ended(size_t, const std::string&) override {}
  void finished() override { f_(); }  // tasks catch their own errors: they answer a client

 private:
  std::function<void()> f_;
};

}  // namespace

bool Scheduler::submit(std::function<void()> task) { return submit(std::make_shared<Task>(std::move(task))); }

void Scheduler::work(int threads) {
  set_threads(threads);
  BatchGenerator gen(model_, weights_);
  for (;;) {
    while (running_.size() < parallel_ && admit_one(gen)) {
    }
    if (!running_.empty()) {
      step(gen);
      continue;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) return;  // closing, and everything admitted has run
  }
}

// Starts the next waiting choice: prefilled, it joins the batch. Jobs with
// nothing more to start leave the queue on the way.
bool Scheduler::admit_one(BatchGenerator& gen) {
  std::shared_ptr<Queued> q;
  size_t choice = 0;
  std::vector<std::shared_ptr<Queued>> spent;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!queue_.empty() && !q) {
      std::shared_ptr<Queued> front = queue_.front();
      if (front->job->cancelled() || front->next == front->job->choices()) {
        queue_.pop_front();
        spent.push_back(std::move(front));
      } else {
        q = std::move(front);
        choice = q->next++;
      }
    }
  }
  for (const auto& s : spent) retire(*s);
  if (!q) return false;
  try {
    const int id = gen.add(q->job->prompt(choice), q->job->options(choice));
    ++q->running;
    running_[id] = {q, choice};
    q->job->started(choice);
  } catch (const std::exception& e) {
    q->job->ended(choice, e.what());
    retire(*q);
  }
  return true;
}

// One token of every running choice; the ones that end leave the batch.
void Scheduler::step(BatchGenerator& gen) {
  std::vector<std::pair<int, std::string>> failed;
  std::vector<BatchGenerator::Drawn> drawn;
  try {
    drawn = gen.next(&failed);
  } catch (const std::exception& e) {  // the step itself: every choice in it fails
    std::vector<int> ids;
    for (const auto& [id, r] : running_) ids.push_back(id);
    for (int id : ids) end(gen, id, e.what());
    return;
  }
  for (const BatchGenerator::Drawn& d : drawn) {
    const Running& r = running_.at(d.id);
    if (d.token && r.job->job->token(r.choice, GenerationStep{*d.token, d.logits})) continue;
    const auto f = std::find_if(failed.begin(), failed.end(), [&](const auto& p) { return p.first == d.id; });
    end(gen, d.id, f == failed.end() ? std::string() : f->second);
  }
}

void Scheduler::end(BatchGenerator& gen, int id, const std::string& error) {
  const Running r = running_.at(id);
  running_.erase(id);
  gen.remove(id);
  r.job->job->ended(r.choice, error);
  --r.job->running;
  retire(*r.job);
}

void Scheduler::retire(Queued& q) {
  if (q.retired || q.running > 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (q.next < q.job->choices() && !q.job->cancelled()) return;  // more to start
    q.retired = true;
  }
  q.job->finished();
  std::lock_guard<std::mutex> lock(mutex_);
  --admitted_;
}

}  // namespace gpt2lab::serve
