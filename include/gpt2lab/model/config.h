// GPT-2 hyper-parameters: every one is named here once, with its default.
//
// Shapes use the field's letters throughout gpt2lab: B batch, T time,
// C channels (n_embd), V vocab, Vp padded vocab, NH heads, hs head size,
// L layers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpt2lab {

// Where normalization sits relative to the residual add, for each of the
// two sublayers f (attention, MLP) of a block. docs/design.md gives every
// formula with its paper.
enum class NormPlacement {
  pre,       // GPT-2: x = x + f(N(x)); final ln_f before the LM head
  post,      // original Transformer / GPT-1: x = N(x + f(x))
  sandwich,  // CogView's Sandwich-LN (Peri-LN): x = x + N_out(f(N(x))); final ln_f
  deepnorm,  // DeepNet (Wang et al. 2022): x = N(alpha * x + f(x)), alpha = (2L)^(1/4)
  rezero,    // ReZero (Bachlechner et al. 2020): x = x + alpha_l * f(x), alpha_l learned, init 0
  none,      // no normalization: x = x + f(x) (T-Fixup's model)
};

// What the norms compute (every norm of the model, ln_f included).
enum class NormType {
  layernorm,  // (x - mean) / sqrt(var + eps) * weight + bias
  rmsnorm,    // Zhang & Sennrich 2019: x / sqrt(mean(x^2) + eps) * weight (no bias)
};

// How the Linear (matmul) weights are drawn. Embeddings are N(0, 0.02) in
// every scheme but t-fixup (and embedding_scale unit); norm weights/biases
// are 1/0 in all.
enum class InitScheme {
  normal,   // N(0, 0.02)
  xavier,   // Glorot uniform U(+-sqrt(6 / (fan_in + fan_out)))
  he,       // Kaiming normal N(0, sqrt(2 / fan_in))
  zero,     // all Linear weights 0 (shows the symmetry problem)
  gpt2,     // normal + residual_scale (GPT-2's choice)
  small,    // Nguyen & Salazar 2019: N(0, sqrt(2 / (5 n_embd)))
  t_fixup,  // Huang et al. 2020 for a model without norms (norm none): xavier, branch and embeddings scaled
};

// The scale of the blocks' input x = wte[tok] + wpe[pos], the quantity
// Xiong et al. 2020 vary: a factor on the sum in the forward, and for unit
// also how wte and wpe are drawn at init. The sum is scaled, not wte alone
// (as Vaswani et al. do before adding fixed sinusoids): with learned wte and
// wpe drawn alike, scaling both keeps GPT-2's balance of token and position
// and changes only the input's magnitude. The tied LM head reads wte
// unscaled.
//          forward factor  wte, wpe drawn from  each table's share of x
//   none   1               N(0, 0.02)           std 0.02: GPT-2
//   sqrt   sqrt(n_embd)    N(0, 0.02)           std 0.02 sqrt(n_embd): GPT-2's tables, x sqrt(d_model)
//   unit   sqrt(n_embd)    N(0, 1/n_embd)       std 1: the original Transformer's (fairseq's)
//                                               unit-scale input, as Xiong et al. measured it
enum class EmbeddingScale { none, sqrt, unit };

const char* to_string(NormPlacement n);
const char* to_string(NormType t);
const char* to_string(InitScheme s);
const char* to_string(EmbeddingScale e);
NormPlacement parse_norm(const std::string& s);              // throws Error
NormType parse_norm_type(const std::string& s);              // throws Error
InitScheme parse_init(const std::string& s);                 // throws Error
EmbeddingScale parse_embedding_scale(const std::string& s);  // throws Error

// The init that belongs to a placement, what `--init auto` means: gpt2 for
// pre, post and sandwich; xavier for deepnorm (DeepNet's, then scaled by its
// beta) and rezero; t-fixup for none.
InitScheme default_init(NormPlacement norm);

struct ModelConfig {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int block_size = 1024;  // n_positions
  int vocab_size = 50257;
  float layer_norm_epsilon = 1e-5f;
  NormPlacement norm = NormPlacement::pre;
  NormType norm_type = NormType::layernorm;
  InitScheme init = InitScheme::gpt2;
  // Scale attn.c_proj / mlp.c_proj by 1/sqrt(2 * n_layer) at init.
  bool residual_scale = true;
  // Final norm before the LM head. Pre-LN and Sandwich always have it;
  // Post-LN and DeepNorm (whose last op already is a norm), ReZero and none
  // do not by default.
  bool final_norm = true;
  EmbeddingScale embedding_scale = EmbeddingScale::none;

  // Logits are computed over a vocab padded to a multiple of 64 (aligned
  // rows for the matmul); padded logits never enter the loss or sampling.
  int padded_vocab_size() const { return (vocab_size + 63) / 64 * 64; }
  int head_size() const { return n_embd / n_head; }
  // The forward's factor on wte + wpe: sqrt(n_embd) for sqrt and unit, 1
  // for none.
  double embedding_factor() const;
  // What multiplies the skip path of every residual add: DeepNet's alpha =
  // (2 n_layer)^(1/4) for deepnorm, 1 otherwise.
  double skip_factor() const;
  // DeepNet's beta = (8 n_layer)^(-1/4), the init factor of the branch
  // weights (value, attn.c_proj, mlp.c_fc, mlp.c_proj) for deepnorm; 1 otherwise.
  double deepnorm_beta() const;
  // The block has norms inside it (pre, post, sandwich, deepnorm); rezero
  // and none have none, only ln_f if final_norm is on.
  bool has_block_norms() const;
  bool has_norms() const { return has_block_norms() || final_norm; }

  // Throws Error with a message naming the bad field.
  void validate() const;
};

// A short label for logs: "pre-LN", "post-LN", "sandwich-RMSNorm",
// "deepnorm-LN", "rezero", "no norm".
std::string norm_label(const ModelConfig& c);

// Defaults that depend on other fields: residual_scale follows the init
// scheme (on for gpt2), final_norm follows the placement (on for pre and
// sandwich).
ModelConfig make_config(int n_layer, int n_head, int n_embd, int block_size, int vocab_size, NormPlacement norm,
                        InitScheme init);

// The fields a user chooses, described once: the config.json key, the
// command-line flag, the help text, the words a choice accepts (none: a
// positive integer) and the command line's default, a small model that
// trains on a laptop rather than GPT-2 small. "auto" follows another field
// (init and final_norm follow norm, residual_scale follows init).
struct ModelField {
  std::string key, flag, help, default_text;
  std::vector<std::string> choices;
};
const std::vector<ModelField>& model_fields();

// The field whose flag is `name` without its dashes ("n-layer"; '_' may
// stand for '-'), or null.
const ModelField* find_model_field(const std::string& name);
// A value given as JSON (an integer, one of the field's words, or true/false
// for on/off) as the field's text; throws Error naming the flag.
std::string model_field_text(const ModelField& f, const nlohmann::json& v);

// A validated config from field texts by key (a missing key takes its
// default_text); throws Error naming the flag.
ModelConfig config_from_fields(const std::map<std::string, std::string>& text);

// config.json in Hugging Face GPT-2 keys plus ours (norm, norm_type, init,
// residual_scale, final_norm, embedding_scale).
nlohmann::json to_json(const ModelConfig& c);
// Hugging Face GPT-2 keys gpt2lab reads nothing from but whose values it
// cannot represent (activation_function, model_type, tie_word_embeddings,
// n_ctx != n_positions, n_inner, scale_attn_weights, cross-attention): a
// value other than GPT-2's is an Error naming the key, never ignored. The
// one rule for config.json wherever it is read (loading a model, `train
// --config RUN/config.json`). Dropout and init_range fields are training
// details of another trainer and are ignored.
void check_fixed_fields(const nlohmann::json& j, const std::string& where);
// `where` names the source for error messages (e.g. the file path).
ModelConfig config_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace gpt2lab
