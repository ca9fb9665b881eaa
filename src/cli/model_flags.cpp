#include "cli/model_flags.h"

#include "cli/command.h"
#include "core/error.h"

namespace gpt2lab::cli {

void add_model_flags(CLI::App* sub, ModelFlags& f) {
  sub->add_option("--n-layer", f.n_layer, "Transformer blocks (L)")->capture_default_str();
  sub->add_option("--n-head", f.n_head, "Attention heads (NH); must divide --n-embd")->capture_default_str();
  sub->add_option("--n-embd", f.n_embd, "Embedding width (C)")->capture_default_str();
  sub->add_option("--block-size", f.block_size, "Context length (n_positions)")->capture_default_str();
  sub->add_option("--vocab-size", f.vocab_size, "Vocabulary size (V); GPT-2's is 50257")->capture_default_str();
  sub->add_option("--norm", f.norm, "LayerNorm placement: pre (GPT-2) or post (original Transformer)")
      ->check(CLI::IsMember({"pre", "post"}))->capture_default_str();
  sub->add_option("--init", f.init, "Linear weight init: gpt2 (normal + residual scale), normal, xavier, he, zero")
      ->check(CLI::IsMember({"gpt2", "normal", "xavier", "he", "zero"}))->capture_default_str();
  sub->add_option("--residual-scale", f.residual_scale,
                  "Scale c_proj weights by 1/sqrt(2*n_layer): on, off, auto (on for gpt2 only)")
      ->check(CLI::IsMember({"on", "off", "auto"}))->capture_default_str();
  sub->add_option("--final-norm", f.final_norm,
                  "Final LayerNorm before the LM head: on, off, auto (on for pre, off for post)")
      ->check(CLI::IsMember({"on", "off", "auto"}))->capture_default_str();
  sub->add_option("--seed", f.seed, "Random seed (init, data order, sampling)")
      ->check(uint64_text())
      ->capture_default_str();
}

ModelConfig ModelFlags::to_config() const {
  ModelConfig c = make_config(n_layer, n_head, n_embd, block_size, vocab_size, parse_norm(norm),
                              parse_init(init));
  if (residual_scale != "auto") c.residual_scale = residual_scale == "on";
  if (final_norm != "auto") c.final_norm = final_norm == "on";
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(std::string("invalid model flags: ") + e.what());
  }
  return c;
}

}  // namespace gpt2lab::cli
