// gpt2lab as a library: load a checkpoint, tokenize a prompt with the
// tokenizer that belongs to it, and generate a continuation.
//
//   generate CHECKPOINT "PROMPT" [TOKENS]
//
// Built against the *installed* package (find_package(gpt2lab) or
// pkg-config gpt2lab); see examples/README.md.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "gpt2lab/version.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CHECKPOINT PROMPT [TOKENS]\n", argv[0]);
    return 2;
  }
  try {
    const gpt2lab::GPT2<float> model = gpt2lab::load_model(argv[1]);
    const gpt2lab::Tokenizer tok = gpt2lab::checkpoint_tokenizer(argv[1]);
    const std::vector<int> prompt = tok.encode(argv[2], /*allow_special=*/true);

    gpt2lab::SamplingOptions o;
    o.max_new_tokens = argc > 3 ? std::atoi(argv[3]) : 16;
    o.temperature = 0;  // greedy: the same text every run
    o.eot_id = tok.eot_id();
    const std::vector<int> ids = gpt2lab::generate(model, prompt, o);

    std::printf("gpt2lab %s: %zu prompt tokens, %zu new\n%s%s\n", GPT2LAB_VERSION, prompt.size(), ids.size(), argv[2],
                tok.decode(ids).c_str());
  } catch (const gpt2lab::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
