// The steps of drawing a generation's tokens that Generator (generate.h)
// and BatchGenerator (decode_batch.h) share, so that a sequence decoded in
// a batch draws exactly the tokens it draws alone.
#pragma once

#include <span>
#include <vector>

#include "gpt2lab/core/rng.h"
#include "gpt2lab/sample/generate.h"

namespace gpt2lab {

// Whether the generation ends with the token just drawn (`last`, the
// `drawn`-th): end of text with stop_at_eot, or max_new_tokens.
bool last_token_ends(const SamplingOptions& o, int last, int drawn);

// Draws the next token from the logits of the context `seq` (whose last
// `drawn` tokens were drawn; `position` tokens are in the cache), appends
// it to seq and counts it. Throws Error on logits that are not finite.
int draw_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng, std::vector<int>& seq, int& drawn,
               int position);

}  // namespace gpt2lab
