// Writes the seed corpora of the fuzz targets, each made by the library's own
// writers from real (small) models, shards and vocabularies, so the seeds
// follow the formats as they evolve and no binary file is committed.
//   make_seeds OUT_DIR   -> OUT_DIR/<target>/seed-*
// Sizes stay small (a 1-layer, 8-channel model; a 300-token vocabulary) so
// the fuzzers spend their time on structure, not on bulk data.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "data/token_shard.h"
#include "fuzz_util.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/train/trainer.h"
#include "io/llmc.h"
#include "io/safetensors.h"
#include "tokenizer/trainer.h"

namespace fs = std::filesystem;
using namespace gpt2lab;

namespace {

fs::path out_root;
int written = 0;

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = out_root / target;
  fs::create_directories(dir);
  write_file_atomic(dir / ("seed-" + name), bytes);
  ++written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  out_root = argv[1];
  const fs::path work = out_root / ".work";
  fs::create_directories(work);

  // Models: Pre-LN and Post-LN, tiny; saved as a checkpoint and as llm.c.
  for (auto norm : {NormPlacement::pre, NormPlacement::post}) {
    ModelConfig c = make_config(1, 2, 8, 16, 64, norm, InitScheme::gpt2);
    GPT2<float> m(c);
    m.init_weights(7);
    const std::string tag = to_string(norm);
    const fs::path dir = work / ("ckpt-" + tag);
    save_model(dir, m, true, {{"tokenizer", "gpt2"}});
    const std::string config = read_file(dir / kConfigFile, SIZE_MAX);
    const std::string weights = read_file(dir / kWeightsFile, SIZE_MAX);
    seed("fuzz_safetensors", tag, weights);
    seed("fuzz_checkpoint", tag, config + std::string(fuzz::kFileSeparator) + weights);
    seed("fuzz_config", "model-" + tag, config);
    if (norm == NormPlacement::pre) {
      // The same model as Hugging Face lays it out: names without the
      // "transformer." prefix, BF16 data, and the attn.bias mask buffers the
      // loader skips; the layout `gpt2lab sample` reads from a HF folder.
      const SafetensorsFile st = SafetensorsFile::open(dir / kWeightsFile);
      nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
      std::string data;
      for (const auto& [name, e] : st.tensors()) {
        std::vector<float> v(e.numel());
        st.read_f32(name, v.data());
        const std::string hf = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
        header[hf] = {
            {"dtype", "BF16"}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + 2 * v.size()}}};
        for (float x : v) {
          const uint16_t b = f32_to_bf16(x);
          data.append(reinterpret_cast<const char*>(&b), 2);
        }
      }
      const size_t mask = size_t(16) * 16 * 4;
      header["h.0.attn.bias"] = {
          {"dtype", "F32"}, {"shape", {1, 1, 16, 16}}, {"data_offsets", {data.size(), data.size() + mask}}};
      data.append(mask, '\0');
      std::string text = header.dump();
      while (text.size() % 8) text.push_back(' ');
      const uint64_t n = text.size();
      std::string file(reinterpret_cast<const char*>(&n), 8);
      file += text + data;
      seed("fuzz_checkpoint", "hf-bf16", config + std::string(fuzz::kFileSeparator) + file);
      seed("fuzz_safetensors", "hf-bf16", file);
    }
    if (norm == NormPlacement::pre) {
      for (bool bf16 : {false, true}) {
        save_llmc(work / "model.bin", m, bf16);
        seed("fuzz_llmc", bf16 ? "bf16" : "fp32", read_file(work / "model.bin", SIZE_MAX));
      }
    }
  }
  // A safetensors file with F16 and BF16 entries and metadata, by hand
  // (write_safetensors only writes F32).
  {
    nlohmann::json h = {{"a", {{"dtype", "F16"}, {"shape", {2, 2}}, {"data_offsets", {0, 8}}}},
                        {"b", {{"dtype", "BF16"}, {"shape", {3}}, {"data_offsets", {8, 14}}}},
                        {"__metadata__", {{"format", "pt"}}}};
    std::string text = h.dump();
    while (text.size() % 8) text.push_back(' ');
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(text.size() >> (8 * i));
    file += text + std::string("\x00\x3c\x00\xc0\xff\x7b\x01\x00\x80\x3f\x80\xbf\x80\x7f", 14);
    seed("fuzz_safetensors", "half", file);
  }
  // A training run's config.json, as train() writes it.
  {
    TrainOptions o;
    o.model = make_config(2, 2, 64, 64, 97, NormPlacement::pre, InitScheme::gpt2);
    o.data = "data";
    o.out = "run";
    seed("fuzz_config", "run", to_json(o).dump(2));
    // The shape of a checkpoint's state.json as the trainer writes it.
    seed("fuzz_config", "state",
         nlohmann::json{{"step", 12}, {"adam_t", 12}, {"data_position", 48}, {"metrics_bytes", 30}}.dump(2));
  }
  // Token shards: empty, short, and one with every byte pattern.
  {
    std::vector<int> tokens;
    for (int i = 0; i < 300; ++i) tokens.push_back((i * 7919) % 65536);
    for (size_t n : {size_t(0), size_t(5), tokens.size()}) {
      write_token_shard(work / "shard.bin", std::span<const int>(tokens.data(), n));
      std::string bytes = read_file(work / "shard.bin", SIZE_MAX);
      bytes += "\x03\x0f";  // B, T selectors read from the last two bytes
      seed("fuzz_token_shard", std::to_string(n), bytes);
    }
  }
  // A small trained vocabulary (byte-level BPE, as `gpt2lab tokenizer train`).
  {
    const std::vector<std::string> docs = {
        "The quick brown fox jumps over the lazy dog. It's 2024; we'll see 12345 things.",
        "naïve café Übergröße ☃ 日本語 😀\n\n   indented\ttabs"};
    const BpeVocab v = train_bpe(docs, 300, 1);
    save_bpe(v, work / "tok", /*force=*/true);
    const std::string enc = read_file(work / "tok" / "encoder.json", SIZE_MAX);
    const std::string bpe = read_file(work / "tok" / "vocab.bpe", SIZE_MAX);
    seed("fuzz_tokenizer_load", "trained", enc + std::string(fuzz::kFileSeparator) + bpe);
  }
  // Text for encode/decode: ASCII, mixed scripts, invalid UTF-8, specials.
  seed("fuzz_tokenizer_encode", "ascii", "Hello, world! It's 3.14159 -- don't   panic.\n\n");
  seed("fuzz_tokenizer_encode", "unicode", "naïve café Übergröße ☃ 日本語 😀 Ελληνικά עברית");
  seed("fuzz_tokenizer_encode", "invalid", std::string("\xC3\x28 \xE2\x82 \xF0\x9F\x98 \xFF\xFE \xED\xA0\x80 ok"));
  seed("fuzz_tokenizer_encode", "special", "a<|endoftext|>b <|endoftext|><|endoftext|> <|endoft");
  seed("fuzz_tokenizer_encode", "spaces", std::string(300, ' ') + "x" + std::string(200, '\n'));
  // Command lines: first byte picks the subcommand, arguments split at NUL.
  const std::vector<std::vector<std::string>> lines = {
      {"--n-layer", "2", "--n-head", "2", "--n-embd", "64", "--out", "x", "--seed", "18446744073709551615"},
      {"-B", "4", "-T", "32", "--steps", "40", "--lr", "3e-3", "--warmup", "4", "--out", "r", "--data", "d"},
      {"--temperature", "0.8", "--top-k", "40", "--top-p", "0.95", "--max-new-tokens", "10", "--prompt-ids", "1 2 3"},
      {"--threads", "4096", "--lr", "1e309", "--steps", "-1", "--batch-size", "99999999999"}};
  for (size_t i = 0; i < lines.size(); ++i) {
    for (int sub = 0; sub < 8; ++sub) {
      std::string bytes(1, static_cast<char>(sub));
      for (const auto& a : lines[i]) bytes += a + std::string(1, '\0');
      seed("fuzz_cli", std::to_string(i) + "-" + std::to_string(sub), bytes);
    }
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  std::printf("make_seeds: %d seeds in %s\n", written, out_root.c_str());
  return 0;
}
