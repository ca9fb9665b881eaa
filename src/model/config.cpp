#include "gpt2lab/model/config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "core/parse.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

const char* to_string(NormPlacement n) {
  switch (n) {
    case NormPlacement::pre: return "pre";
    case NormPlacement::post: return "post";
    case NormPlacement::sandwich: return "sandwich";
    case NormPlacement::deepnorm: return "deepnorm";
    case NormPlacement::rezero: return "rezero";
    case NormPlacement::none: return "none";
  }
  return "?";
}

const char* to_string(NormType t) { return t == NormType::layernorm ? "layernorm" : "rmsnorm"; }

const char* to_string(InitScheme s) {
  switch (s) {
    case InitScheme::normal: return "normal";
    case InitScheme::xavier: return "xavier";
    case InitScheme::he: return "he";
    case InitScheme::zero: return "zero";
    case InitScheme::gpt2: return "gpt2";
    case InitScheme::small: return "small";
    case InitScheme::t_fixup: return "t-fixup";
  }
  return "?";
}

const char* to_string(EmbeddingScale e) {
  switch (e) {
    case EmbeddingScale::none: return "none";
    case EmbeddingScale::sqrt: return "sqrt";
    case EmbeddingScale::unit: return "unit";
  }
  return "?";
}

NormPlacement parse_norm(const std::string& s) {
  for (NormPlacement v : {NormPlacement::pre, NormPlacement::post, NormPlacement::sandwich, NormPlacement::deepnorm,
                          NormPlacement::rezero, NormPlacement::none})
    if (s == to_string(v)) return v;
  throw Error("norm: '" + s + "' is not a norm placement (use pre, post, sandwich, deepnorm, rezero or none)");
}

NormType parse_norm_type(const std::string& s) {
  if (s == "layernorm") return NormType::layernorm;
  if (s == "rmsnorm") return NormType::rmsnorm;
  throw Error("norm_type: '" + s + "' is not a norm type (use layernorm or rmsnorm)");
}

InitScheme parse_init(const std::string& s) {
  for (InitScheme v : {InitScheme::normal, InitScheme::xavier, InitScheme::he, InitScheme::zero, InitScheme::gpt2,
                       InitScheme::small, InitScheme::t_fixup})
    if (s == to_string(v)) return v;
  throw Error("init: '" + s + "' is not an init scheme (use normal, xavier, he, zero, gpt2, small or t-fixup)");
}

EmbeddingScale parse_embedding_scale(const std::string& s) {
  for (EmbeddingScale v : {EmbeddingScale::none, EmbeddingScale::sqrt, EmbeddingScale::unit})
    if (s == to_string(v)) return v;
  throw Error("embedding_scale: '" + s + "' is not an embedding scale (use none, sqrt or unit)");
}

std::string norm_label(const ModelConfig& c) {
  switch (c.norm) {
    case NormPlacement::rezero: return "rezero";
    case NormPlacement::none: return "no norm";
    default: return std::string(to_string(c.norm)) + (c.norm_type == NormType::rmsnorm ? "-RMSNorm" : "-LN");
  }
}

InitScheme default_init(NormPlacement norm) {
  switch (norm) {
    case NormPlacement::deepnorm:
    case NormPlacement::rezero: return InitScheme::xavier;
    case NormPlacement::none: return InitScheme::t_fixup;
    default: return InitScheme::gpt2;
  }
}

double ModelConfig::embedding_factor() const {
  return embedding_scale == EmbeddingScale::none ? 1.0 : std::sqrt(static_cast<double>(n_embd));
}

// Wang et al. 2022 (DeepNet), for a decoder-only model of N layers: alpha = (2N)^(1/4),
// beta = (8N)^(-1/4).
double ModelConfig::skip_factor() const {
  return norm == NormPlacement::deepnorm ? std::pow(2.0 * n_layer, 0.25) : 1.0;
}

double ModelConfig::deepnorm_beta() const {
  return norm == NormPlacement::deepnorm ? std::pow(8.0 * n_layer, -0.25) : 1.0;
}

bool ModelConfig::has_block_norms() const { return norm != NormPlacement::rezero && norm != NormPlacement::none; }

namespace {

// The rules that tie the placement, the norm type and the init together.
void check_norm_and_init(const ModelConfig& c) {
  check(!(c.init == InitScheme::gpt2 && !c.residual_scale),
        "init gpt2 is normal + residual_scale; for no scaling use init normal");
  check(c.norm != NormPlacement::pre || c.final_norm, "Pre-LN needs the final LayerNorm (final_norm)");
  check(c.norm != NormPlacement::sandwich || c.final_norm,
        "norm sandwich needs the final norm (final_norm): its residual stream is never normalized otherwise");
  check(!(c.norm == NormPlacement::deepnorm && c.residual_scale),
        "norm deepnorm scales the branch init by its own beta = (8 n_layer)^(-1/4); residual_scale must be off "
        "(use init xavier, DeepNet's, or another scheme without the scale)");
  check(
      c.init != InitScheme::t_fixup || c.norm == NormPlacement::none,
      std::string("init t-fixup is for a model without norms (norm none); this model's norm is ") + to_string(c.norm));
  check(!(c.init == InitScheme::t_fixup && c.residual_scale),
        "init t-fixup scales the branch weights itself; residual_scale must be off");
  // T-Fixup draws the embeddings itself, N(0, 1/n_embd) times its factor:
  // unit's N(0, 1/n_embd) would silently replace one of the two.
  check(!(c.init == InitScheme::t_fixup && c.embedding_scale == EmbeddingScale::unit),
        "init t-fixup draws the embeddings itself (N(0, 1/n_embd) times (6 n_layer)^(-1/4)); embedding_scale unit "
        "would replace that draw (use embedding_scale none or sqrt with t-fixup)");
  check(c.norm_type == NormType::layernorm || c.has_norms(),
        std::string("norm_type rmsnorm: norm ") + to_string(c.norm) +
            " has no norm to compute (turn final_norm on, or leave norm_type layernorm)");
}

}  // namespace

void ModelConfig::validate() const {
  auto positive = [](int v, const char* name) {
    check(v > 0, std::string(name) + " must be positive, got " + std::to_string(v));
  };
  positive(n_layer, "n_layer");
  positive(n_head, "n_head");
  positive(n_embd, "n_embd");
  positive(block_size, "block_size");
  positive(vocab_size, "vocab_size");
  check(n_embd % n_head == 0,
        "n_embd (" + std::to_string(n_embd) + ") must be divisible by n_head (" + std::to_string(n_head) + ")");
  check(layer_norm_epsilon > 0 && layer_norm_epsilon < 1, "layer_norm_epsilon must be in (0, 1)");
  check_norm_and_init(*this);
  // Limits keep every index and buffer size inside int64 with room to spare
  // and reject sizes no machine could hold before anything is allocated.
  check(n_layer <= 4096, "n_layer " + std::to_string(n_layer) + " exceeds 4096");
  check(n_embd <= 65536, "n_embd " + std::to_string(n_embd) + " exceeds 65536");
  check(block_size <= 1 << 20, "block_size " + std::to_string(block_size) + " exceeds 1048576");
  check(vocab_size <= 1 << 24, "vocab_size " + std::to_string(vocab_size) + " exceeds 16777216");
  const double C = n_embd, L = n_layer;
  // (An upper bound over the placements: sandwich has 4C more per layer.)
  double params = padded_vocab_size() * C + block_size * C + L * 12.0 * C * C + L * 17.0 * C + L + 2 * C;
  // 3 copies (weights, grads, 2 Adam moments -> 4) of fp32 must fit in 2^40 bytes.
  check(params * 16.0 < 1099511627776.0,
        "model has " + std::to_string(static_cast<long long>(params)) +
            " parameters: too large (weights, gradients and optimizer state would exceed 1 TiB)");
}

ModelConfig make_config(int n_layer, int n_head, int n_embd, int block_size, int vocab_size, NormPlacement norm,
                        InitScheme init) {
  ModelConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.block_size = block_size;
  c.vocab_size = vocab_size;
  c.norm = norm;
  c.init = init;
  c.residual_scale = init == InitScheme::gpt2;
  c.final_norm = norm == NormPlacement::pre || norm == NormPlacement::sandwich;
  return c;
}

const std::vector<ModelField>& model_fields() {
  // clang-format off
  static const std::vector<ModelField> fields = {
      {"n_layer", "--n-layer", "Transformer blocks (L)", "6", {}},
      {"n_head", "--n-head", "Attention heads (NH); must divide --n-embd", "6", {}},
      {"n_embd", "--n-embd", "Embedding width (C)", "384", {}},
      {"n_positions", "--block-size", "Context length (n_positions)", "256", {}},
      {"vocab_size", "--vocab-size", "Vocabulary size (V); GPT-2's is 50257", "50257", {}},
      {"norm", "--norm",
       "Norm placement: pre (GPT-2), post (original Transformer), sandwich (CogView, Peri-LN), deepnorm (DeepNet), "
       "rezero (ReZero, no norms), none (no norms)", "pre", {"pre", "post", "sandwich", "deepnorm", "rezero", "none"}},
      {"norm_type", "--norm-type", "What every norm computes: layernorm or rmsnorm (Zhang & Sennrich 2019)",
       "layernorm", {"layernorm", "rmsnorm"}},
      {"init", "--init",
       "Linear weight init: gpt2 (normal + residual scale), normal, xavier, he, zero, small (Nguyen & Salazar), "
       "t-fixup (Huang et al., norm none only), auto (the placement's: gpt2; xavier for deepnorm and rezero; "
       "t-fixup for none)", "auto", {"auto", "gpt2", "normal", "xavier", "he", "zero", "small", "t-fixup"}},
      {"residual_scale", "--residual-scale",
       "Scale c_proj weights by 1/sqrt(2*n_layer): on, off, auto (on for gpt2 only)", "auto", {"on", "off", "auto"}},
      {"final_norm", "--final-norm",
       "Final norm before the LM head: on, off, auto (on for pre and sandwich, off otherwise)", "auto",
       {"on", "off", "auto"}},
      {"embedding_scale", "--embedding-scale",
       "Blocks' input: none (GPT-2, wte + wpe), sqrt (sqrt(n_embd) * (wte + wpe), Xiong et al. 2020) or unit "
       "(the same with wte and wpe drawn from N(0, 1/n_embd), not N(0, 0.02): the original Transformer's "
       "unit-scale input)", "none", {"none", "sqrt", "unit"}},
  };
  // clang-format on
  return fields;
}

const ModelField* find_model_field(const std::string& name) {
  std::string flag = name.rfind("--", 0) == 0 ? name : "--" + name;
  std::replace(flag.begin(), flag.end(), '_', '-');
  for (const ModelField& f : model_fields())
    if (f.flag == flag) return &f;
  return nullptr;
}

std::string model_field_text(const ModelField& f, const nlohmann::json& v) {
  if (f.choices.empty()) {
    check(v.is_number_integer(), f.flag + ": expected an integer, got " + v.dump());
    return v.dump();
  }
  const bool on_off = std::find(f.choices.begin(), f.choices.end(), "on") != f.choices.end();
  if (on_off && v.is_boolean()) return v.get<bool>() ? "on" : "off";
  std::string words;
  for (const std::string& c : f.choices) words += (words.empty() ? "" : ", ") + c;
  const bool known =
      v.is_string() && std::find(f.choices.begin(), f.choices.end(), v.get<std::string>()) != f.choices.end();
  check(known, f.flag + ": expected one of " + words + (on_off ? " (or true/false)" : "") + ", got " + v.dump());
  return v.get<std::string>();
}

ModelConfig config_from_fields(const std::map<std::string, std::string>& text) {
  std::map<std::string, std::string> v;
  std::map<std::string, std::string> flag;
  for (const ModelField& f : model_fields()) {
    const auto it = text.find(f.key);
    v[f.key] = it == text.end() ? f.default_text : it->second;
    flag[f.key] = f.flag;
  }
  auto integer = [&](const std::string& key) {
    return static_cast<int>(
        parse_int(v[key], flag[key], std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  };
  ModelConfig c;
  try {
    const NormPlacement norm = parse_norm(v["norm"]);
    c = make_config(integer("n_layer"), integer("n_head"), integer("n_embd"), integer("n_positions"),
                    integer("vocab_size"), norm, v["init"] == "auto" ? default_init(norm) : parse_init(v["init"]));
    c.norm_type = parse_norm_type(v["norm_type"]);
    if (v["residual_scale"] != "auto") c.residual_scale = v["residual_scale"] == "on";
    if (v["final_norm"] != "auto") c.final_norm = v["final_norm"] == "on";
    c.embedding_scale = parse_embedding_scale(v["embedding_scale"]);
    c.validate();
  } catch (const Error& e) {
    throw Error(std::string("invalid model flags: ") + e.what());
  }
  return c;
}

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json j;
  // Hugging Face's GPT2LMHeadModel is Pre-LN with a final LayerNorm: a model
  // it cannot represent must not claim to be one (from_pretrained would load
  // a Post-LN model as Pre-LN, RMSNorm as LayerNorm, or a scaled input as
  // GPT-2's, without a word). docs/design.md, file formats.
  const bool hf_gpt2 = c.norm == NormPlacement::pre && c.final_norm && c.embedding_scale == EmbeddingScale::none &&
                       c.norm_type == NormType::layernorm;
  j["architectures"] = {hf_gpt2 ? "GPT2LMHeadModel" : "Gpt2labLMHeadModel"};
  j["model_type"] = hf_gpt2 ? "gpt2" : "gpt2lab";
  j["activation_function"] = "gelu_new";
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_embd"] = c.n_embd;
  j["n_positions"] = c.block_size;
  j["n_ctx"] = c.block_size;
  j["vocab_size"] = c.vocab_size;
  j["layer_norm_epsilon"] = float_as_decimal(c.layer_norm_epsilon);
  // GPT-2's tokenizers (and gpt2lab's) put <|endoftext|> last.
  j["bos_token_id"] = c.vocab_size - 1;
  j["eos_token_id"] = c.vocab_size - 1;
  j["tie_word_embeddings"] = true;
  j["norm"] = to_string(c.norm);
  j["norm_type"] = to_string(c.norm_type);
  j["init"] = to_string(c.init);
  j["residual_scale"] = c.residual_scale;
  j["final_norm"] = c.final_norm;
  j["embedding_scale"] = to_string(c.embedding_scale);
  return j;
}

namespace {

int get_int(const nlohmann::json& j, const char* key, const std::string& where) {
  return static_cast<int>(json_int(j, key, where, 1, std::numeric_limits<int>::max()));
}

// A string field (absent: `dflt`) read by `parse`, whose Error names the
// field and its choices.
template <typename Parse>
auto get_choice(const nlohmann::json& j, const char* key, const char* dflt, const std::string& where, Parse parse) {
  const auto it = j.find(key);
  check(it == j.end() || it->is_string(), where + ": field '" + key + "' must be a string");
  try {
    return parse(it == j.end() ? std::string(dflt) : it->get<std::string>());
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

}  // namespace

void check_fixed_fields(const nlohmann::json& j, const std::string& where) {
  // Each key, when present and not null, must hold a value the model has.
  auto refuse_unless = [&](const char* key, const auto& ok, const std::string& supported) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null() || ok(*it)) return;
    throw Error(where + ": " + key + " is " + it->dump() + "; gpt2lab's GPT-2 supports only " + supported +
                ", so this model cannot be represented (refused, not ignored)");
  };
  auto equals = [](const nlohmann::json& want) { return [want](const nlohmann::json& v) { return v == want; }; };
  refuse_unless(
      "activation_function", [](const nlohmann::json& v) { return v == "gelu_new" || v == "gelu_pytorch_tanh"; },
      "gelu_new (GPT-2's tanh GELU; gelu_pytorch_tanh is the same function)");
  refuse_unless(
      "model_type", [](const nlohmann::json& v) { return v == "gpt2" || v == "gpt2lab"; }, "\"gpt2\" (or \"gpt2lab\")");
  refuse_unless("tie_word_embeddings", equals(true), "GPT-2's tied LM head (lm_head = wte): true");
  const auto pos = j.find("n_positions");
  refuse_unless("n_ctx", equals(pos == j.end() ? nlohmann::json() : *pos),
                "n_ctx equal to n_positions (the context length)");
  const auto embd = j.find("n_embd");
  const bool embd_int = embd != j.end() && embd->is_number_integer() && !embd->is_number_unsigned();
  refuse_unless("n_inner", equals(embd_int ? nlohmann::json(embd->get<int64_t>() * 4) : nlohmann::json()),
                "an MLP of 4 * n_embd (n_inner null)");
  refuse_unless("scale_attn_weights", equals(true), "attention scaled by 1/sqrt(head size): true");
  refuse_unless("scale_attn_by_inverse_layer_idx", equals(false), "the same attention scale in every layer: false");
  refuse_unless("add_cross_attention", equals(false), "a decoder without cross-attention: false");
  refuse_unless("is_encoder_decoder", equals(false), "a decoder-only model: false");
}

ModelConfig config_from_json(const nlohmann::json& j, const std::string& where) {
  check(j.is_object(), where + ": expected a JSON object");
  ModelConfig c;
  c.n_layer = get_int(j, "n_layer", where);
  c.n_head = get_int(j, "n_head", where);
  c.n_embd = get_int(j, "n_embd", where);
  c.block_size = get_int(j, "n_positions", where);
  c.vocab_size = get_int(j, "vocab_size", where);
  check_fixed_fields(j, where);
  if (auto it = j.find("layer_norm_epsilon"); it != j.end()) {
    check(it->is_number(), where + ": field 'layer_norm_epsilon' must be a number");
    // Range-checked as a double: converting a value past float's range (say
    // 1e300) to float is undefined behaviour, not a clean inf.
    const double eps = it->get<double>();
    check(eps > 0 && eps < 1, where + ": field 'layer_norm_epsilon' = " + it->dump() + " must be in (0, 1)");
    c.layer_norm_epsilon = static_cast<float>(eps);
  }
  c.norm = get_choice(j, "norm", "pre", where, parse_norm);
  // Checkpoints written before the field existed use LayerNorm.
  c.norm_type = get_choice(j, "norm_type", "layernorm", where, parse_norm_type);
  c.init = get_choice(j, "init", "gpt2", where, parse_init);
  // Checkpoints written before the field existed are GPT-2's: none.
  c.embedding_scale = get_choice(j, "embedding_scale", "none", where, parse_embedding_scale);
  auto get_bool = [&](const char* key, bool dflt) {
    auto it = j.find(key);
    if (it == j.end()) return dflt;
    check(it->is_boolean(), where + ": field '" + key + "' must be true or false");
    return it->get<bool>();
  };
  c.residual_scale = get_bool("residual_scale", c.init == InitScheme::gpt2);
  c.final_norm = get_bool("final_norm", c.norm == NormPlacement::pre || c.norm == NormPlacement::sandwich);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  return c;
}

}  // namespace gpt2lab
