#include "gpt2lab/train/request.h"
#include "test_util.h"

#include <gtest/gtest.h>

namespace gpt2lab {
namespace {

using test::expect_refused;

TEST(TrainRequest, SetsOptionsAndModelFieldsByFlagName) {
  TrainRequest r;
  r.set("batch_size", 4);
  r.set("--seq-len", 32);
  r.set("lr", 2e-3);
  r.set("shuffle", true);
  r.set("n_layer", 3);
  r.set("residual-scale", false);
  r.set("norm", "post");
  EXPECT_EQ(r.options.batch_size, 4);
  EXPECT_EQ(r.options.seq_len, 32);
  EXPECT_FLOAT_EQ(r.options.schedule.lr, 2e-3f);
  EXPECT_TRUE(r.options.shuffle);
  EXPECT_TRUE(r.given_option("--batch-size") && r.given_option("--lr") && !r.given_option("--steps"));
  EXPECT_EQ(r.given.size(), 4u);
  const std::map<std::string, std::string> model = {{"n_layer", "3"}, {"residual_scale", "off"}, {"norm", "post"}};
  EXPECT_EQ(r.model, model);
  r.set("batch_size", 8);  // given twice: one row
  EXPECT_EQ(r.given.size(), 4u);
}

TEST(TrainRequest, RefusesWhatTheFlagsRefuse) {
  TrainRequest r;
  expect_refused([&] { r.set("bogus", 1); }, {"unknown training option 'bogus'", "batch-size", "n-layer"});
  expect_refused([&] { r.set("lr", -1); }, {"--lr"});
  expect_refused([&] { r.set("batch_size", "four"); }, {"--batch-size"});
  expect_refused([&] { r.set("norm", "middle"); }, {"--norm", "pre, post"});
  expect_refused([&] { r.set("n_layer", 2.5); }, {"--n-layer", "integer"});
  expect_refused([&] { r.set("final_norm", "yes"); }, {"--final-norm", "on, off, auto"});
}

TEST(TrainRequest, ResolvesAsTheCliDoes) {
  TrainRequest r;
  r.set("lr", 1e-3);
  expect_refused([&] { (void)r.resolve(); }, {"--data is required"});
  r.set("data", "somewhere");
  r.set("vocab_size", 97);
  r.set("n_layer", 2);
  const TrainOptions t = r.resolve();
  EXPECT_FLOAT_EQ(t.schedule.min_lr, 1e-4f);  // lr/10 unless given
  EXPECT_EQ(t.model.n_layer, 2);
  EXPECT_EQ(t.model.vocab_size, 97);
  r.set("min_lr", 0);
  EXPECT_EQ(r.resolve().schedule.min_lr, 0.0f);
}

}  // namespace
}  // namespace gpt2lab
