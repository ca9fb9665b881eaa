// Gradient buckets for the sum overlapped with backward: they tile the
// buffer in the order backward finishes it, and a range backward reports
// final is never written again.
#include "train/grad_buckets.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {
namespace {

// Contiguous, from the end of the buffer to its start, each final no later
// than the one before it, the embeddings' bucket last.
void expect_tiling(const std::vector<GradientBuckets::Bucket>& buckets, size_t size) {
  ASSERT_FALSE(buckets.empty());
  size_t end = size;
  int ready = 1 << 30;
  for (const auto& b : buckets) {
    EXPECT_EQ(b.end, end);
    EXPECT_LT(b.begin, b.end);
    EXPECT_LT(b.ready_at, ready);
    end = b.begin;
    ready = b.ready_at;
  }
  EXPECT_EQ(end, 0u);
  EXPECT_EQ(buckets.back().ready_at, -1);
}

TEST(GradientBuckets, TileTheBufferInBackwardOrder) {
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post}) {
    const ModelConfig c = make_config(3, 2, 16, 8, 13, norm, InitScheme::normal);
    const ParamLayout layout(c);
    // Tiny buckets: ln_f alone, one per layer, then wte and wpe.
    const GradientBuckets each(layout, c.n_layer, 1e-9);
    expect_tiling(each.buckets(), layout.size());
    ASSERT_EQ(each.buckets().size(), 5u);
    EXPECT_EQ(each.buckets()[0].begin, layout.ln_f_w);
    EXPECT_EQ(each.buckets()[1].begin, layout.layers[2].ln_1_w);
    EXPECT_EQ(each.buckets()[4].end, layout.layers[0].ln_1_w);
    // Huge ones: the whole buffer after backward.
    const GradientBuckets one(layout, c.n_layer, 1e6);
    ASSERT_EQ(one.buckets().size(), 1u);
    expect_tiling(one.buckets(), layout.size());
    // Two layers' worth: whole layers, at least that much.
    const size_t layer = layout.layers[1].ln_1_w - layout.layers[0].ln_1_w;
    const GradientBuckets two(layout, c.n_layer, 2.0 * static_cast<double>(layer * sizeof(float)) / 1e6);
    expect_tiling(two.buckets(), layout.size());
    for (size_t i = 0; i + 1 < two.buckets().size(); ++i)
      EXPECT_GE(two.buckets()[i].end - two.buckets()[i].begin, 2 * layer);
  }
}

// What backward reports final (the range a bucket with that ready_at covers)
// holds its end-of-backward value from the report on: Pre-LN, Post-LN with
// and without the final norm, every later placement (ReZero's alpha, summed
// over both sublayers, included) and RMSNorm, accumulating into earlier
// gradients.
TEST(GradientBuckets, BackwardReportsOnlyFinalGradients) {
  const std::pair<NormPlacement, bool> placements[] = {
      {NormPlacement::pre, true},      {NormPlacement::post, true},      {NormPlacement::post, false},
      {NormPlacement::sandwich, true}, {NormPlacement::deepnorm, false}, {NormPlacement::rezero, false},
      {NormPlacement::rezero, true},   {NormPlacement::none, false}};
  for (size_t i = 0; i < std::size(placements); ++i) {
    const auto& [norm, final_norm] = placements[i];
    ModelConfig c = make_config(3, 2, 16, 8, 13, norm, InitScheme::normal);
    c.final_norm = final_norm;
    // RMSNorm wherever there is a norm to make one, every other case.
    if (c.has_norms() && i % 2 == 1) c.norm_type = NormType::rmsnorm;
    SCOPED_TRACE(norm_label(c));
    GPT2<float> m(c);
    m.init_weights(7);
    for (const auto& o : m.layout().layers)  // ReZero's alphas off 0, so its branches get gradients
      if (o.alpha != kAbsent) m.params()[o.alpha] = 0.5f;
    const std::vector<int> tokens = {1, 4, 4, 0, 12, 3, 7, 2}, targets = {4, 4, 0, 12, 3, 7, 2, 9};
    m.zero_grad();
    m.forward(tokens.data(), targets.data(), 2, 4);
    m.backward(0.5f);  // an earlier micro-batch
    const GradientBuckets each(m.layout(), c.n_layer, 1e-9);
    std::map<size_t, std::vector<float>> seen;  // begin -> gradients from begin on, when first final
    int last = c.n_layer + 1;
    m.forward(tokens.data(), targets.data(), 2, 4);
    m.backward(0.5f, [&](int first_final) {
      EXPECT_LE(first_final, last);
      last = first_final;
      for (const auto& b : each.buckets())
        if (b.ready_at == first_final) seen.try_emplace(b.begin, m.grads() + b.begin, m.grads() + m.buffer_size());
    });
    EXPECT_EQ(last, -1);
    ASSERT_EQ(seen.size(), each.buckets().size());
    for (const auto& [begin, g] : seen)
      for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], m.grads()[begin + i]) << "element " << begin + i;
  }
}

}  // namespace
}  // namespace gpt2lab
