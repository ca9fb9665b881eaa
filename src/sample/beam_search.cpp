#include "gpt2lab/sample/beam_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "gpt2lab/core/error.h"

namespace gpt2lab {
namespace {

struct Beam {
  int id;  // its sequence in the batch
  std::vector<int> tokens;
  double logp = 0;
};

struct Candidate {
  double logp;
  size_t beam;
  int token;
};

// The k most probable next tokens of one beam, its score so far added.
// k = 2 width is enough: of a beam's 2 width best, at most one is the end
// token, so the step's width continuations are found among them.
void top_candidates(std::span<const float> logits, size_t beam, double logp, int k, std::vector<Candidate>& out) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - mx));
  const double lse = mx + std::log(sum);
  std::vector<int> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int>(k, static_cast<int>(idx.size()));
  auto at = [&](int i) { return logits[static_cast<size_t>(i)]; };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return at(a) > at(b) || (at(a) == at(b) && a < b); });
  for (int i = 0; i < k; ++i) {
    const int token = idx[static_cast<size_t>(i)];
    out.push_back({logp + at(token) - lse, beam, token});
  }
}

// One step: the `width` best continuations of `beams` that do not end;
// those that end (ranked within the first `width`) go to `done`. A parent
// continued more than once is forked before any beam steps.
std::vector<Beam> extend(DecodeBatch& batch, const std::vector<Beam>& beams, int width, int end_token,
                         std::vector<BeamHypothesis>& done) {
  std::vector<Candidate> cands;
  for (size_t b = 0; b < beams.size(); ++b)
    top_candidates(batch.logits(beams[b].id), b, beams[b].logp, 2 * width, cands);
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.logp > b.logp; });
  std::vector<Beam> next;
  std::vector<int> used(beams.size(), 0);
  for (size_t rank = 0; rank < cands.size() && static_cast<int>(next.size()) < width; ++rank) {
    const Candidate& k = cands[rank];
    const Beam& parent = beams[k.beam];
    if (k.token == end_token) {
      if (static_cast<int>(rank) < width)
        done.push_back({parent.tokens, k.logp / static_cast<double>(parent.tokens.size() + 1), true});
      continue;
    }
    Beam nb{used[k.beam]++ == 0 ? parent.id : batch.fork(parent.id), parent.tokens, k.logp};
    nb.tokens.push_back(k.token);
    next.push_back(std::move(nb));
  }
  for (size_t b = 0; b < beams.size(); ++b)
    if (used[b] == 0) batch.remove(beams[b].id);
  return next;
}

}  // namespace

BeamHypothesis beam_search(DecodeBatch& batch, std::span<const int> prompt, int end_token, int max_new_tokens,
                           int width) {
  check(width >= 1 && width <= 64, "beam search: the width must be 1 to 64, not " + std::to_string(width));
  const int context = batch.context_size();
  const int room = std::min(max_new_tokens, context - static_cast<int>(prompt.size()));
  std::vector<Beam> beams{{batch.add(prompt), {}, 0.0}};
  std::vector<BeamHypothesis> done;
  auto searching = [&] { return !beams.empty() && static_cast<int>(done.size()) < width; };
  for (int i = 0; i < room && searching(); ++i) {
    beams = extend(batch, beams, width, end_token, done);
    if (i + 1 == room || !searching()) break;
    std::vector<int> ids, tokens;
    for (const Beam& b : beams) ids.push_back(b.id), tokens.push_back(b.tokens.back());
    batch.step(ids, tokens);
  }
  // At the cap the live beams compete; once `width` ended, the search is over.
  const bool at_cap = static_cast<int>(done.size()) < width;
  for (const Beam& b : beams) {
    if (at_cap) done.push_back({b.tokens, b.logp / static_cast<double>(std::max<size_t>(1, b.tokens.size())), false});
    batch.remove(b.id);
  }
  const auto best = std::max_element(
      done.begin(), done.end(), [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score < b.score; });
  return best == done.end() ? BeamHypothesis{} : *best;
}

}  // namespace gpt2lab
