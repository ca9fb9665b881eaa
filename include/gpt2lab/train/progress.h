// How a training run's progress reads on a terminal or in a log: the
// ProgressFn the CLI (and a study) hands to Trainer.
#pragma once

#include "gpt2lab/train/trainer.h"

namespace gpt2lab {

// Prints to stderr: a line every `log_every` steps (and at the first and
// last step), every evaluation and how the run ended; on a terminal also a
// live line, rewritten in place within the terminal's width.
ProgressFn stderr_progress(long log_every);

}  // namespace gpt2lab
