// final_hidden_states / InferenceSession::append_hidden equal the LM head's
// input of the full forward (ln_f's output, or the last block's output
// without a final norm) at every position, prefilled or decoded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/inference.h"

namespace gpt2lab {
namespace {

constexpr int kT = 12, kC = 32, kV = 75;

GPT2<float> test_model(NormPlacement norm, bool final_norm) {
  ModelConfig c = make_config(2, 4, kC, kT, kV, norm, InitScheme::he);
  c.final_norm = final_norm;
  GPT2<float> m(c);
  m.init_weights(23);
  // Norm weights and biases away from 1 and 0, so a norm skipped or applied twice shows.
  for (const auto& t : m.layout().tensors())
    if (t.kind != TensorKind::wte && t.kind != TensorKind::wpe && t.shape.size() == 1 && t.numel > 1)
      for (size_t i = 0; i < t.numel; ++i) m.params()[t.offset + i] += 0.1f * static_cast<float>((i * 3 + 1) % 5);
  return m;
}

std::vector<int> test_tokens() {
  std::vector<int> tokens(kT);
  for (int t = 0; t < kT; ++t) tokens[t] = (t * 29 + 5) % kV;
  return tokens;
}

// The forward's LM head input, row by row.
std::vector<float> forward_hidden(GPT2<float>& m, const std::vector<int>& tokens) {
  m.forward(tokens.data(), nullptr, 1, kT);
  const float* h = m.config().final_norm ? m.activations().lnf : m.residual(m.config().n_layer);
  return std::vector<float>(h, h + static_cast<size_t>(kT) * kC);
}

double rel_diff(const float* got, const float* want, size_t n) {
  double ref = 0, diff = 0;
  for (size_t i = 0; i < n; ++i) {
    ref = std::max(ref, std::abs(static_cast<double>(want[i])));
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return diff / ref;
}

TEST(FinalHidden, EqualsTheForwardsLmHeadInputForEveryPlacement) {
  const std::vector<int> tokens = test_tokens();
  for (const auto& [norm, final_norm] : {std::pair{NormPlacement::pre, true}, std::pair{NormPlacement::post, false},
                                         std::pair{NormPlacement::none, true}, std::pair{NormPlacement::none, false}}) {
    GPT2<float> m = test_model(norm, final_norm);
    const std::vector<float> want = forward_hidden(m, tokens);
    const std::vector<float> got = final_hidden_states(m, tokens);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LE(rel_diff(got.data(), want.data(), want.size()), 1e-5)
        << "norm " << to_string(norm) << " final_norm " << final_norm;
  }
}

TEST(FinalHidden, DecodedRowsEqualTheForwardsToo) {
  const std::vector<int> tokens = test_tokens();
  GPT2<float> m = test_model(NormPlacement::pre, true);
  const std::vector<float> want = forward_hidden(m, tokens);
  InferenceSession s(m);
  constexpr int kPrefill = 5;
  const float* rows = s.append_hidden(std::span<const int>(tokens.data(), kPrefill));
  EXPECT_LE(rel_diff(rows, want.data(), static_cast<size_t>(kPrefill) * kC), 1e-5);
  for (int t = kPrefill; t < kT; ++t) {
    const float* row = s.append_hidden(std::span<const int>(&tokens[t], 1));
    EXPECT_LE(rel_diff(row, want.data() + static_cast<size_t>(t) * kC, kC), 1e-5) << "position " << t;
  }
  EXPECT_EQ(s.position(), kT);
}

TEST(FinalHidden, RefusesAnEmptyOrTooLongSequence) {
  GPT2<float> m = test_model(NormPlacement::pre, true);
  EXPECT_THROW(final_hidden_states(m, {}), Error);
  const std::vector<int> too_long(kT + 1, 1);
  EXPECT_THROW(final_hidden_states(m, too_long), Error);
}

}  // namespace
}  // namespace gpt2lab
