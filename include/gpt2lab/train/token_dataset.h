// Token arrays as a dataset folder that `gpt2lab train --data` reads: llm.c
// shards train.bin and (when given) val.bin, the files a test or a script
// would write. For callers that hold their tokens in memory (Python's
// train(train_tokens=...)): the trainer, its options and its run directory
// stay the CLI's, so the same tokens train the same run bit for bit.
#pragma once

#include <filesystem>
#include <span>

namespace gpt2lab {

// Writes the shards into a staging folder beside `dir` and publishes it in
// one rename. A `dir` that already holds exactly these shards (and nothing
// else) is left as it is, so a resumed run finds its data unchanged; one
// holding anything else is refused, naming it. Throws Error, before
// anything is written, when `train` is empty or a token is outside llm.c's
// uint16 ids [0, 65535] (naming the array and the index).
void write_token_dataset(const std::filesystem::path& dir, std::span<const int> train, std::span<const int> val);

}  // namespace gpt2lab
