#include "io/gguf.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "io/llmc.h"

namespace gpt2lab {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kAlignment = 32;
constexpr int kQ8Block = 32;

// GGUF metadata value types (the spec's gguf_metadata_value_type).
enum ValueType : uint32_t { u32 = 4, i32 = 5, f32v = 6, boolean = 7, str = 8, array = 9 };

// Little-endian serialization of the header part (x86 and every platform
// ggml runs on are little-endian; the file is defined little-endian).
class Header {
 public:
  template <class T>
  void raw(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void string(const std::string& s) {
    raw<uint64_t>(s.size());
    bytes_ += s;
  }
  void key(const std::string& k, ValueType t) {
    string(k);
    raw<uint32_t>(t);
    ++keys_;
  }
  void kv_u32(const std::string& k, uint32_t v) {
    key(k, u32);
    raw(v);
  }
  void kv_f32(const std::string& k, float v) {
    key(k, f32v);
    raw(v);
  }
  void kv_bool(const std::string& k, bool v) {
    key(k, boolean);
    raw<uint8_t>(v ? 1 : 0);
  }
  void kv_str(const std::string& k, const std::string& v) {
    key(k, str);
    string(v);
  }
  void kv_strings(const std::string& k, const std::vector<std::string>& v) {
    key(k, array);
    raw<uint32_t>(str);
    raw<uint64_t>(v.size());
    for (const auto& s : v) string(s);
  }
  void kv_i32s(const std::string& k, const std::vector<int32_t>& v) {
    key(k, array);
    raw<uint32_t>(i32);
    raw<uint64_t>(v.size());
    for (int32_t x : v) raw(x);
  }
  uint64_t keys() const { return keys_; }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
  uint64_t keys_ = 0;
};

// One tensor: its GGUF name and type, and where its values sit in our
// buffer. Our matmul weights are (in, out) row-major; GGUF wants (out, in).
struct Tensor {
  std::string name;
  GgufType type;
  size_t offset;
  int64_t ne0, ne1;  // ne0 innermost; ne1 = 1 for a vector
  bool transpose;
};

size_t tensor_bytes(const Tensor& t) {
  const auto n = static_cast<size_t>(t.ne0 * t.ne1);
  switch (t.type) {
    case GgufType::f32: return n * 4;
    case GgufType::f16: return n * 2;
    case GgufType::q8_0: return n / kQ8Block * (2 + kQ8Block);
  }
  return 0;
}

std::vector<Tensor> gguf_tensors(const GPT2<float>& model, GgufType mat) {
  const ModelConfig& c = model.config();
  const ParamLayout& lay = model.layout();
  const int64_t C = c.n_embd;
  std::vector<Tensor> t;
  t.push_back({"token_embd.weight", mat, lay.wte, C, c.vocab_size, false});
  t.push_back({"position_embd.weight", GgufType::f32, lay.wpe, C, c.block_size, false});
  auto vec = [&](const std::string& name, size_t off, int64_t n) {
    t.push_back({name, GgufType::f32, off, n, 1, false});
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerOffsets& o = lay.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    vec(b + "attn_norm.weight", o.ln_1_w, C);
    vec(b + "attn_norm.bias", o.ln_1_b, C);
    t.push_back({b + "attn_qkv.weight", mat, o.c_attn_w, C, 3 * C, true});
    vec(b + "attn_qkv.bias", o.c_attn_b, 3 * C);
    t.push_back({b + "attn_output.weight", mat, o.attn_proj_w, C, C, true});
    vec(b + "attn_output.bias", o.attn_proj_b, C);
    vec(b + "ffn_norm.weight", o.ln_2_w, C);
    vec(b + "ffn_norm.bias", o.ln_2_b, C);
    t.push_back({b + "ffn_up.weight", mat, o.c_fc_w, C, 4 * C, true});
    vec(b + "ffn_up.bias", o.c_fc_b, 4 * C);
    t.push_back({b + "ffn_down.weight", mat, o.mlp_proj_w, 4 * C, C, true});
    vec(b + "ffn_down.bias", o.mlp_proj_b, C);
  }
  vec("output_norm.weight", lay.ln_f_w, C);
  vec("output_norm.bias", lay.ln_f_b, C);
  return t;
}

// The values of t in GGUF's row order (ne1 rows of ne0), as floats.
std::vector<float> gather(const Tensor& t, const float* P) {
  const auto n = static_cast<size_t>(t.ne0 * t.ne1);
  std::vector<float> v(n);
  if (!t.transpose) {
    std::copy(P + t.offset, P + t.offset + n, v.begin());
    return v;
  }
  // Ours: ne0 rows (in) of ne1 columns (out).
  for (int64_t i = 0; i < t.ne0; ++i)
    for (int64_t o = 0; o < t.ne1; ++o) v[o * t.ne0 + i] = P[t.offset + i * t.ne1 + o];
  return v;
}

std::string encode(const std::vector<float>& v, GgufType type) {
  std::string out;
  if (type == GgufType::f32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
  } else if (type == GgufType::f16) {
    out.resize(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = f32_to_f16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    for (size_t b = 0; b < v.size(); b += kQ8Block) {
      float amax = 0;
      for (int j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(v[b + j]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const uint16_t dh = f32_to_f16(d);
      out.append(reinterpret_cast<const char*>(&dh), 2);
      for (int j = 0; j < kQ8Block; ++j) out.push_back(static_cast<char>(std::lround(v[b + j] * id)));
    }
  }
  return out;
}

void check_target(const fs::path& path, bool overwrite) {
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return;
  const std::string p = "'" + path.string() + "'";
  check(fs::is_regular_file(st), p + " exists and is not a regular file; refusing to replace it");
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  check(in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0,
        p + " exists and is not a GGUF file; gpt2lab never replaces a file it did not write, so choose another name");
  check(overwrite, p + " exists; pass --force to replace it");
}

void put_metadata(Header& h, const ModelConfig& c, const GgufVocab& vocab, GgufType type, const std::string& name) {
  h.kv_str("general.architecture", "gpt2");
  h.kv_str("general.name", name);
  h.kv_u32("general.alignment", kAlignment);
  // llama_ftype: all f32, mostly f16, mostly q8_0.
  h.kv_u32("general.file_type", type == GgufType::f32 ? 0 : type == GgufType::f16 ? 1 : 7);
  h.kv_u32("gpt2.context_length", c.block_size);
  h.kv_u32("gpt2.embedding_length", c.n_embd);
  h.kv_u32("gpt2.feed_forward_length", 4 * c.n_embd);
  h.kv_u32("gpt2.block_count", c.n_layer);
  h.kv_u32("gpt2.attention.head_count", c.n_head);
  h.kv_f32("gpt2.attention.layer_norm_epsilon", c.layer_norm_epsilon);
  h.kv_str("tokenizer.ggml.model", "gpt2");
  h.kv_str("tokenizer.ggml.pre", "gpt-2");
  h.kv_strings("tokenizer.ggml.tokens", vocab.tokens);
  std::vector<int32_t> types(vocab.tokens.size(), 1);  // normal
  types[vocab.eot_id] = 3;                             // control
  h.kv_i32s("tokenizer.ggml.token_type", types);
  h.kv_strings("tokenizer.ggml.merges", vocab.merges);
  h.kv_u32("tokenizer.ggml.bos_token_id", vocab.eot_id);
  h.kv_u32("tokenizer.ggml.eos_token_id", vocab.eot_id);
  h.kv_bool("tokenizer.ggml.add_bos_token", false);
}

void check_can_write(const ModelConfig& c, const GgufVocab& vocab, GgufType type) {
  check_plain_gpt2(c, "GGUF (llama.cpp's gpt2 architecture)");
  check(static_cast<int>(vocab.tokens.size()) == c.vocab_size,
        "the tokenizer has " + std::to_string(vocab.tokens.size()) + " tokens but the model's vocab_size is " +
            std::to_string(c.vocab_size) + "; pass the tokenizer the model was trained with");
  check(vocab.eot_id >= 0 && vocab.eot_id < c.vocab_size, "the tokenizer has no <|endoftext|> token");
  if (type == GgufType::q8_0)
    check(c.n_embd % kQ8Block == 0, "q8_0 needs n_embd divisible by 32; this model has n_embd " +
                                        std::to_string(c.n_embd) + " (export f16 or f32 instead)");
}

}  // namespace

GgufType parse_gguf_type(const std::string& s) {
  if (s == "f32") return GgufType::f32;
  if (s == "f16") return GgufType::f16;
  if (s == "q8_0") return GgufType::q8_0;
  throw Error("unknown GGUF type '" + s + "' (expected f32, f16 or q8_0)");
}

uint16_t f32_to_f16(float f) {
  const auto x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {
    // Subnormal half (or zero): value / 2^-24, rounded to nearest even by
    // the float addition of a magic number.
    const float r = std::bit_cast<float>(absx) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(r) - std::bit_cast<uint32_t>(0.5f)));
  }
  const uint32_t mant_odd = (absx >> 13) & 1u;
  const uint32_t rounded = absx + 0xc8000fffu + mant_odd;  // rebias exponent 127->15, round half to even
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

void save_gguf(const fs::path& path, const GPT2<float>& model, const GgufVocab& vocab, GgufType type,
               const std::string& name, bool overwrite) {
  const ModelConfig& c = model.config();
  check_can_write(c, vocab, type);
  check_target(path, overwrite);
  const std::vector<Tensor> tensors = gguf_tensors(model, type);
  Header h;
  put_metadata(h, c, vocab, type, name);
  Header infos;
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    infos.string(t.name);
    const bool matrix = t.ne1 > 1;
    infos.raw<uint32_t>(matrix ? 2 : 1);
    infos.raw<uint64_t>(t.ne0);
    if (matrix) infos.raw<uint64_t>(t.ne1);
    infos.raw<uint32_t>(static_cast<uint32_t>(t.type));
    infos.raw<uint64_t>(offset);
    offset += (tensor_bytes(t) + kAlignment - 1) / kAlignment * kAlignment;
  }
  Header start;
  start.bytes() = "GGUF";
  start.raw(kVersion);
  start.raw<uint64_t>(tensors.size());
  start.raw<uint64_t>(h.keys());
  std::string head = start.bytes() + h.bytes() + infos.bytes();
  head.resize((head.size() + kAlignment - 1) / kAlignment * kAlignment, '\0');
  AtomicFileWriter w(path);
  w.write(head.data(), head.size());
  for (const Tensor& t : tensors) {
    std::string data = encode(gather(t, model.params()), t.type);
    data.resize((data.size() + kAlignment - 1) / kAlignment * kAlignment, '\0');
    w.write(data.data(), data.size());
  }
  w.commit();
}

}  // namespace gpt2lab
