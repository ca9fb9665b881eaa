// Which tokenizer belongs to a checkpoint (gpt2lab/tokenizer/tokenizer.h).
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {

Tokenizer checkpoint_tokenizer(const fs::path& model, const std::string& given) {
  const fs::path dir = model_directory(model);
  const nlohmann::json cfg = read_config_json(dir);
  const fs::path cfg_path = dir / kConfigFile;
  std::string spec = given;
  std::error_code ec;
  // Its own files first: they travel with it (write_tokenizer_files).
  if (spec.empty() && fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec)) spec = dir.string();
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

void write_tokenizer_files(const fs::path& dir, const std::string& spec, int block_size) {
  const Tokenizer tok = Tokenizer::resolve(spec);  // validated before it is copied
  const auto [vocab, merges] = Tokenizer::files(Tokenizer::resolve_path(spec));
  write_file_atomic(dir / "vocab.json", read_file(vocab, kMaxTextFileBytes));
  write_file_atomic(dir / "merges.txt", read_file(merges, kMaxTextFileBytes));
  const std::string eot(Tokenizer::kEndOfText);
  const nlohmann::json config = {{"tokenizer_class", "GPT2Tokenizer"},
                                 {"model_max_length", block_size},
                                 {"bos_token", eot},
                                 {"eos_token", eot},
                                 {"unk_token", eot},
                                 {"add_prefix_space", false},
                                 {"gpt2lab_tokenizer_sha256", tok.content_hash()}};
  write_file_atomic(dir / "tokenizer_config.json", config.dump(2) + "\n");
}

}  // namespace gpt2lab
