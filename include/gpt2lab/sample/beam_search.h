// Beam search over a DecodeBatch: the `width` most probable continuations
// are kept, each a sequence of the batch, and decoded together in one step
// per token; a continuation that branches forks its parent's cache rather
// than recomputing it. Scores are log-probabilities (log-softmax in
// double) divided by the generated length, <|endoftext|> counted, as
// fairseq's default length normalization; an end token counts only when
// it ranks among the `width` best candidates of its step. The search stops
// when `width` hypotheses have ended or at the length cap, where the live
// beams compete as hypotheses that did not end. Tested against a search
// that recomputes every hypothesis from scratch
// (tests/sample/beam_search_test.cpp).
#pragma once

#include <span>
#include <vector>

#include "gpt2lab/sample/decode_batch.h"

namespace gpt2lab {

struct BeamHypothesis {
  std::vector<int> tokens;  // generated, without the end token
  double score = 0;         // log-probability per generated token
  bool ended = false;       // with the end token (false: at the cap)
};

// The best hypothesis for `prompt` (held in `batch` only during the call);
// at most `max_new_tokens` tokens and the model's context. Width 1 is
// greedy decoding. Throws Error on a width outside 1..64 or a bad prompt.
BeamHypothesis beam_search(DecodeBatch& batch, std::span<const int> prompt, int end_token, int max_new_tokens,
                           int width);

}  // namespace gpt2lab
