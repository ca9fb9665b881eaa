#include "io/llmc.h"

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "io/safetensors.h"

namespace gpt2lab {

namespace {

constexpr size_t kHeaderInts = 256;

// One llm.c tensor: where it sits in our layout, and whether it is a matmul
// weight stored transposed.
struct Piece {
  size_t offset;   // into our buffer
  int rows, cols;  // our (HF) shape; for 1-D, rows = 1
  bool transpose;
};

// The blob in llm.c order.
std::vector<Piece> llmc_order(const ParamLayout& lay, const ModelConfig& c, int Vp_file) {
  const int C = c.n_embd, L = c.n_layer;
  std::vector<Piece> p;
  p.push_back({lay.wte, Vp_file, C, false});
  p.push_back({lay.wpe, c.block_size, C, false});
  auto each = [&](auto member, int rows, int cols, bool tr) {
    for (int l = 0; l < L; ++l) p.push_back({lay.layers[l].*member, rows, cols, tr});
  };
  each(&LayerOffsets::ln_1_w, 1, C, false);
  each(&LayerOffsets::ln_1_b, 1, C, false);
  each(&LayerOffsets::c_attn_w, C, 3 * C, true);
  each(&LayerOffsets::c_attn_b, 1, 3 * C, false);
  each(&LayerOffsets::attn_proj_w, C, C, true);
  each(&LayerOffsets::attn_proj_b, 1, C, false);
  each(&LayerOffsets::ln_2_w, 1, C, false);
  each(&LayerOffsets::ln_2_b, 1, C, false);
  each(&LayerOffsets::c_fc_w, C, 4 * C, true);
  each(&LayerOffsets::c_fc_b, 1, 4 * C, false);
  each(&LayerOffsets::mlp_proj_w, 4 * C, C, true);
  each(&LayerOffsets::mlp_proj_b, 1, C, false);
  p.push_back({lay.ln_f_w, 1, C, false});
  p.push_back({lay.ln_f_b, 1, C, false});
  return p;
}

}  // namespace

bool is_llmc_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  int32_t magic = 0;
  in.read(reinterpret_cast<char*>(&magic), 4);
  return in.gcount() == 4 && magic == kLlmcMagic;
}

GPT2<float> load_llmc(const fs::path& path) {
  const std::string where = path.string();
  // The header alone first: the file's size is checked against what it
  // implies before the weights are read (a huge file costs nothing).
  const std::string head = read_file_tail(path, kHeaderInts * 4, kHeaderInts * 4);
  check(head.size() >= kHeaderInts * 4,
        where + ": " + std::to_string(head.size()) + " bytes, shorter than the 1024-byte llm.c header (truncated?)");
  int32_t h[kHeaderInts];
  std::memcpy(h, head.data(), sizeof h);
  check(h[0] == kLlmcMagic, where + ": bad magic " + std::to_string(h[0]) + " at offset 0 (expected " +
                                std::to_string(kLlmcMagic) + ": not an llm.c model file)");
  check(h[1] == 3 || h[1] == 5,
        where + ": version " + std::to_string(h[1]) + " at offset 4 is not supported (3 = fp32, 5 = bf16)");
  const char* names[] = {"",           "",          "max_seq_len", "vocab_size",
                         "num_layers", "num_heads", "channels",    "padded_vocab_size"};
  for (int i = 2; i <= 7; ++i)
    check(h[i] > 0, where + ": header field " + names[i] + " (offset " + std::to_string(4 * i) + ") is " +
                        std::to_string(h[i]) + ", must be positive");
  check(h[7] >= h[3],
        where + ": padded_vocab_size " + std::to_string(h[7]) + " is below vocab_size " + std::to_string(h[3]));
  ModelConfig c = make_config(h[4], h[5], h[6], h[2], h[3], NormPlacement::pre, InitScheme::gpt2);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  const int Vp = h[7];
  const size_t bytes_per = h[1] == 3 ? 4 : 2;
  const ParamLayout lay(c);
  const auto order = llmc_order(lay, c, Vp);
  size_t count = 0;
  for (const Piece& p : order) count += static_cast<size_t>(p.rows) * p.cols;
  const size_t expect = kHeaderInts * 4 + count * bytes_per;
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  check(!ec, "cannot read '" + where + "': " + ec.message());
  check(size == expect, where + ": " + std::to_string(size) + " bytes, but the header implies " +
                            std::to_string(expect) + (size < expect ? " (truncated?)" : ""));
  const std::string data = read_file(path, expect);
  check(data.size() == expect, where + ": changed while it was read; read it again");
  GPT2<float> model(c);
  float* P = model.params();
  const char* src = data.data() + kHeaderInts * 4;
  std::vector<float> tmp;
  const int V = c.vocab_size;
  for (const Piece& p : order) {
    const size_t n = static_cast<size_t>(p.rows) * p.cols;
    tmp.resize(n);
    if (bytes_per == 4) {
      std::memcpy(tmp.data(), src, n * 4);
    } else {
      for (size_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        tmp[i] = bf16_to_f32(b);
      }
    }
    src += n * bytes_per;
    if (p.offset == lay.wte) {
      // Our buffer keeps our own padding (multiple of 64); rows past V are zero.
      std::copy(tmp.begin(), tmp.begin() + static_cast<size_t>(V) * p.cols, P + p.offset);
    } else if (p.transpose) {
      // file (out, in) = (cols, rows) -> ours (in, out) = (rows, cols)
      for (int r = 0; r < p.rows; ++r)
        for (int col = 0; col < p.cols; ++col)
          P[p.offset + static_cast<size_t>(r) * p.cols + col] = tmp[static_cast<size_t>(col) * p.rows + r];
    } else {
      std::copy(tmp.begin(), tmp.end(), P + p.offset);
    }
  }
  return model;
}

// Neither llm.c's header nor GGUF's gpt2 architecture has a field for what
// gpt2lab adds to GPT-2: their readers would run such a model as plain GPT-2,
// so it is refused rather than written.
void check_plain_gpt2(const ModelConfig& c, const std::string& format) {
  check(c.norm == NormPlacement::pre && c.final_norm, format + " holds Pre-LN GPT-2 only; this model's norm is " +
                                                          std::string(to_string(c.norm)) +
                                                          " (export it to the Hugging Face layout instead)");
  check(c.norm_type == NormType::layernorm, format + " holds GPT-2's LayerNorm only; this model has norm_type " +
                                                std::string(to_string(c.norm_type)) +
                                                " (export it to the Hugging Face layout instead)");
  check(c.embedding_scale == EmbeddingScale::none,
        format + " holds GPT-2's unscaled embeddings only; this model has embedding_scale " +
            std::string(to_string(c.embedding_scale)) + " (export it to the Hugging Face layout instead)");
}

void save_llmc(const fs::path& path, const GPT2<float>& model, bool bf16) {
  const ModelConfig& c = model.config();
  check_plain_gpt2(c, "the llm.c format");
  const int Vp = (c.vocab_size + 127) / 128 * 128;
  int32_t h[kHeaderInts] = {};
  h[0] = kLlmcMagic;
  h[1] = bf16 ? 5 : 3;
  h[2] = c.block_size;
  h[3] = c.vocab_size;
  h[4] = c.n_layer;
  h[5] = c.n_head;
  h[6] = c.n_embd;
  h[7] = Vp;
  AtomicFileWriter w(path);
  w.write(h, sizeof h);
  const auto order = llmc_order(model.layout(), c, Vp);
  const float* P = model.params();
  std::vector<float> tmp;
  std::vector<uint16_t> half;
  for (const Piece& p : order) {
    const size_t n = static_cast<size_t>(p.rows) * p.cols;
    tmp.assign(n, 0.0f);
    if (p.offset == model.layout().wte) {
      std::copy(P + p.offset, P + p.offset + static_cast<size_t>(c.vocab_size) * p.cols, tmp.begin());
    } else if (p.transpose) {
      for (int r = 0; r < p.rows; ++r)
        for (int col = 0; col < p.cols; ++col)
          tmp[static_cast<size_t>(col) * p.rows + r] = P[p.offset + static_cast<size_t>(r) * p.cols + col];
    } else {
      std::copy(P + p.offset, P + p.offset + n, tmp.begin());
    }
    if (bf16) {
      half.resize(n);
      for (size_t i = 0; i < n; ++i) half[i] = f32_to_bf16(tmp[i]);
      w.write(half.data(), n * 2);
    } else {
      w.write(tmp.data(), n * 4);
    }
  }
  w.commit();
}

}  // namespace gpt2lab
