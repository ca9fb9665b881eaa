// Which tokenizer belongs to a checkpoint (gpt2lab/tokenizer/tokenizer.h).
#include <nlohmann/json.hpp>

#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {

Tokenizer checkpoint_tokenizer(const fs::path& dir, const std::string& given) {
  const nlohmann::json cfg = read_config_json(dir);
  const fs::path cfg_path = dir / kConfigFile;
  std::string spec = given;
  if (spec.empty() && cfg.contains("tokenizer") && cfg["tokenizer"].is_string())
    spec = cfg["tokenizer"].get<std::string>();
  if (spec.empty()) spec = "gpt2";
  Tokenizer tok = Tokenizer::resolve(spec);
  const int vocab = load_config(dir).vocab_size;
  check(tok.vocab_size() == vocab, "tokenizer '" + spec + "' has " + std::to_string(tok.vocab_size()) +
                                       " tokens but the model's vocab_size is " + std::to_string(vocab) +
                                       "; pass the tokenizer it was trained with (--tokenizer DIR)");
  if (cfg.contains("tokenizer_sha256")) {
    check(cfg["tokenizer_sha256"].is_string(), cfg_path.string() + ": field 'tokenizer_sha256' must be a string");
    const std::string want = cfg["tokenizer_sha256"].get<std::string>(), have = tok.content_hash();
    check(want == have, "tokenizer '" + spec + "' (sha256 " + have.substr(0, 12) +
                            "...) is not the one this model was trained with (sha256 " + want.substr(0, 12) +
                            "... in " + cfg_path.string() + "); pass that tokenizer with --tokenizer DIR");
  }
  return tok;
}

}  // namespace gpt2lab
