// The completion scheduler: jobs admitted up to a capacity (more refused),
// their choices decoded together up to `parallel` at once, every choice
// drawing the tokens generate() draws, and what was admitted runs before
// the worker ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "gpt2lab/sample/generate.h"
#include "serve/scheduler.h"

namespace gpt2lab::serve {
namespace {

// A job of `n` choices of one prompt, seeds seed, seed + 1, ...; its first
// start may be held until released.
class FakeJob : public Job {
 public:
  FakeJob(std::vector<int> prompt, SamplingOptions o, size_t n) : prompt_(std::move(prompt)), o_(o), got(n) {}
  size_t choices() const override { return got.size(); }
  std::span<const int> prompt(size_t) const override { return prompt_; }
  SamplingOptions options(size_t i) const override {
    SamplingOptions o = o_;
    o.seed += i;
    return o;
  }
  bool cancelled() const override { return false; }
  void started(size_t) override {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return !hold; });
    ++running;
    most = std::max(most, running);
  }
  bool token(size_t i, const GenerationStep& step) override {
    got[i].push_back(step.id);
    return true;
  }
  void ended(size_t, const std::string& e) override {
    --running;
    error += e;
  }
  void finished() override { ++finishes; }
  std::vector<std::vector<int>> want(const GPT2<float>& m) const {
    std::vector<std::vector<int>> w;
    for (size_t i = 0; i < got.size(); ++i) w.push_back(generate(m, prompt_, options(i)));
    return w;
  }

  std::vector<int> prompt_;
  SamplingOptions o_;
  std::vector<std::vector<int>> got;
  std::mutex mutex;
  std::condition_variable cv;
  bool hold = false;
  int running = 0, most = 0, finishes = 0;
  std::string error;
};

SamplingOptions options(int tokens, float temperature) {
  SamplingOptions o;
  o.max_new_tokens = tokens;
  o.temperature = temperature;
  o.seed = 5;
  return o;
}

TEST(Scheduler, RefusesPastCapacityAndRunsWhatWasAdmitted) {
  GPT2<float> m(make_config(2, 4, 64, 32, 100, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(3);
  auto a = std::make_shared<FakeJob>(std::vector<int>{1, 2, 3}, options(6, 1.0f), 2);
  auto b = std::make_shared<FakeJob>(std::vector<int>{4}, options(9, 0.0f), 1);
  auto c = std::make_shared<FakeJob>(std::vector<int>{5, 6}, options(3, 0.7f), 3);
  a->hold = true;  // the worker waits in a's first start, so the queue fills
  {
    Scheduler s(m, {}, 3, 2, 1);
    ASSERT_TRUE(s.submit(a));
    ASSERT_TRUE(s.submit(b));
    ASSERT_TRUE(s.submit(c));
    EXPECT_FALSE(s.submit(std::make_shared<FakeJob>(std::vector<int>{7}, options(1, 1.0f), 1)));  // 3 admitted
    {
      std::lock_guard<std::mutex> lock(a->mutex);
      a->hold = false;
    }
    a->cv.notify_all();
  }  // the destructor runs what was admitted
  for (const auto& j : {a, b, c}) {
    EXPECT_EQ(j->got, j->want(m));
    EXPECT_EQ(j->finishes, 1);
    EXPECT_EQ(j->running, 0);
    EXPECT_EQ(j->error, "");
  }
  EXPECT_EQ(a->most, 2);  // parallel 2: a's two choices together, then b and c's in turn
}

TEST(Scheduler, DecodesAtMostParallelChoicesTogether) {
  GPT2<float> m(make_config(2, 4, 64, 32, 100, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(4);
  auto j = std::make_shared<FakeJob>(std::vector<int>{9, 8}, options(5, 1.0f), 7);
  {
    Scheduler s(m, {}, 1, 3, 2);
    ASSERT_TRUE(s.submit(j));
  }
  EXPECT_EQ(j->most, 3);
  EXPECT_EQ(j->got, j->want(m));
  EXPECT_EQ(j->finishes, 1);
}

TEST(Scheduler, AChoiceThatCannotStartEndsWithItsError) {
  GPT2<float> m(make_config(2, 4, 64, 32, 100, NormPlacement::pre, InitScheme::gpt2));
  m.init_weights(4);
  auto j = std::make_shared<FakeJob>(std::vector<int>{100}, options(5, 1.0f), 1);  // outside the vocabulary
  {
    Scheduler s(m, {}, 1, 3, 1);
    ASSERT_TRUE(s.submit(j));
  }
  EXPECT_NE(j->error.find("outside the model's vocabulary"), std::string::npos) << j->error;
  EXPECT_EQ(j->finishes, 1);
}

}  // namespace
}  // namespace gpt2lab::serve
