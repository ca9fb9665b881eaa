// llm.c model checkpoints (`gpt2_124M.bin`, `gpt2_124M_bf16.bin`):
//   256 x int32 header: magic 20240326, version (3 = fp32, 5 = bf16),
//   max_seq_len, vocab_size, num_layers, num_heads, channels, padded_vocab
// then every parameter in one blob, in llm.c's order (wte, wpe, ln1w, ln1b,
// qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb,
// lnfw, lnfb; each stacked over layers), matmul weights as PyTorch Linear
// (out, in) — the transpose of Hugging Face's Conv1D (in, out) we hold — and
// wte padded with zero rows to padded_vocab. The format holds a Pre-LN GPT-2.
#pragma once

#include <filesystem>
#include <string>

#include "gpt2lab/model/gpt2.h"

namespace gpt2lab {

namespace fs = std::filesystem;

inline constexpr int kLlmcMagic = 20240326;

bool is_llmc_file(const fs::path& path);  // by its magic
GPT2<float> load_llmc(const fs::path& path);
// Writes atomically; padded vocab rounded up to 128 as llm.c does.
void save_llmc(const fs::path& path, const GPT2<float>& model, bool bf16);

// Throws Error unless c is GPT-2 as OpenAI defined it (Pre-LN with a final
// norm, unscaled embeddings): the only model `format` can express.
void check_plain_gpt2(const ModelConfig& c, const std::string& format);

}  // namespace gpt2lab
