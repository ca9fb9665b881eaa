// GGUF model files (version 3), the format of llama.cpp and ggml, written
// with the tensor names and metadata llama.cpp's `gpt2` architecture reads
// (src/models/gpt2.cpp there): token_embd, position_embd, blk.N.{attn_norm,
// attn_qkv, attn_output, ffn_norm, ffn_up, ffn_down}, output_norm, and no
// output.weight (llama.cpp ties the head to token_embd when it is absent).
// Matmul weights are stored (out, in), ggml's ne = {in, out}.
//
// Layout: "GGUF", version, tensor and key counts, the key/value pairs, the
// tensor infos (name, dims innermost first, type, offset), zero padding to
// general.alignment (32), then each tensor's bytes at its aligned offset.
//
// Types: the matmul weights and token_embd in f32, f16 or q8_0 (blocks of
// 32 values: an f16 scale amax/127, then 32 int8 round(x/scale)); norms,
// biases and position_embd stay f32 (what llama.cpp's own converter does).
// Only plain Pre-LN GPT-2 can be expressed: the rest is refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

namespace fs = std::filesystem;

enum class GgufType : uint32_t { f32 = 0, f16 = 1, q8_0 = 8 };

GgufType parse_gguf_type(const std::string& s);  // "f32" | "f16" | "q8_0"; throws Error

// The tokenizer in GGUF's `gpt2` form: each id's GPT-2 spelling (encoder.json's
// keys), the merges as "left right" in rank order, the end-of-text id.
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  int eot_id = -1;
};

// Writes atomically; never replaces a file that is not a GGUF file, and a
// GGUF file only when overwrite is set.
void save_gguf(const fs::path& path, const GPT2<float>& model, const GgufVocab& vocab, GgufType type,
               const std::string& name, bool overwrite);

// The IEEE half nearest to f (ties to even), as ggml stores it.
uint16_t f32_to_f16(float f);

}  // namespace gpt2lab
