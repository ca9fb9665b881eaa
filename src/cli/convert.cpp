// gpt2lab convert: between our/Hugging Face checkpoint directories and
// llm.c model files; and out to GGUF for llama.cpp.
#include <cstdio>

#include "cli/command.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "io/gguf.h"
#include "io/llmc.h"
#include "tokenizer/byte_unicode.h"

namespace gpt2lab::cli::convert_command {
namespace {

struct ConvertFlags {
  std::string input, out, to, dtype = "fp32";
  bool force = false;
};

// The tokenizer goes with an exported directory: the source's own files,
// else the one it records (by path: copied if it is still there). Written
// into the checkpoint's staging folder, so that a tokenizer that cannot be
// written leaves the old --out as it was, not weights without their tokenizer.
void copy_tokenizer(const ConvertFlags& o, const nlohmann::json& extra, int block_size, const fs::path& staging) {
  const fs::path src = model_directory(o.input);
  std::error_code ec;
  if (fs::exists(src / "vocab.json", ec) && fs::exists(src / "merges.txt", ec)) {
    write_tokenizer_files(staging, src.string(), block_size);
    return;
  }
  if (!extra.contains("tokenizer") || !extra["tokenizer"].is_string()) return;
  try {
    write_tokenizer_files(staging, extra["tokenizer"].get<std::string>(), block_size);
  } catch (const Error& e) {
    std::fprintf(stderr, "note: the model's tokenizer was not copied (%s); it records it by path only\n", e.what());
  }
}

// Only an llm.c model file is ours to replace (and only with --force):
// never a device, a FIFO, a folder or any other file.
void check_llmc_target(const ConvertFlags& o) {
  std::error_code ec;
  const auto st = fs::symlink_status(o.out, ec);
  if (!fs::exists(st)) return;
  check(fs::is_regular_file(st), "--out '" + o.out + "' exists and is not a regular file; refusing to replace it");
  check(is_llmc_file(o.out), "--out '" + o.out +
                                 "' exists and is not an llm.c model file; gpt2lab never replaces a file it "
                                 "did not write, so choose another name");
  check(o.force, "'" + o.out + "' exists; pass --force to replace it");
}

// The checkpoint's tokenizer (GPT-2's for an llm.c file, which records
// none) in GGUF's spelling.
GgufVocab gguf_vocab(const ConvertFlags& o, bool from_llmc) {
  const Tokenizer tok = from_llmc ? Tokenizer::resolve("gpt2") : checkpoint_tokenizer(model_directory(o.input));
  GgufVocab v;
  v.eot_id = tok.eot_id();
  for (int id = 0; id < tok.vocab_size(); ++id) v.tokens.push_back(tokenizer::bytes_to_spelling(tok.token_bytes(id)));
  for (const auto& [l, r] : tok.merges()) v.merges.push_back(v.tokens[l] + " " + v.tokens[r]);
  return v;
}

void write_gguf(const ConvertFlags& o, const GPT2<float>& model, bool from_llmc) {
  const GgufType type = parse_gguf_type(o.dtype == "fp32" ? "f32" : o.dtype);
  const std::string name = fs::path(o.input).filename().string();
  save_gguf(o.out, model, gguf_vocab(o, from_llmc), type, name, o.force);
  std::printf("wrote %s (GGUF, %s): %zu parameters\n", o.out.c_str(), o.dtype.c_str(), model.layout().num_parameters());
}

void run_convert(const ConvertFlags& o) {
  const bool from_llmc = is_llmc_file(o.input);
  if (!from_llmc)
    check(is_checkpoint_dir(model_directory(o.input)),
          "'" + o.input + "' is neither an llm.c model file nor a checkpoint directory");
  const std::string to = o.to.empty() ? (from_llmc ? "hf" : "llmc") : o.to;
  const bool gguf_dtype = o.dtype == "f16" || o.dtype == "q8_0";
  check(!gguf_dtype || to == "gguf", "--dtype " + o.dtype + " is for --to gguf (llm.c files hold fp32 or bf16)");
  check(o.dtype != "bf16" || to == "llmc", "--dtype bf16 is for --to llmc (GGUF takes f32, f16 or q8_0)");
  GPT2<float> model = from_llmc ? load_llmc(o.input) : load_model(o.input);
  if (to == "gguf") return write_gguf(o, model, from_llmc);
  // What the checkpoint records beside its weights (its tokenizer, by path
  // and sha256, and its seed) travels with it; an llm.c file has no place
  // for it.
  nlohmann::json extra = nlohmann::json::object();
  if (!from_llmc) {
    const nlohmann::json cfg = read_config_json(o.input);
    for (const char* key : {"tokenizer", "tokenizer_sha256", "seed"})
      if (cfg.contains(key)) extra[key] = cfg[key];
  }
  if (to == "hf") {
    const int block_size = model.config().block_size;
    save_model(o.out, model, o.force, extra, [&](const fs::path& staging) {
      if (!from_llmc) copy_tokenizer(o, extra, block_size, staging);
    });
  } else {
    check_llmc_target(o);
    save_llmc(o.out, model, o.dtype == "bf16");
    if (extra.contains("tokenizer"))
      std::fprintf(stderr, "note: an llm.c file cannot record the tokenizer; this model was trained with %s\n",
                   extra["tokenizer"].dump().c_str());
  }
  std::printf("wrote %s (%s%s): %zu parameters\n", o.out.c_str(), to == "hf" ? "checkpoint directory" : "llm.c file",
              to == "llmc" ? (o.dtype == "bf16" ? ", bf16" : ", fp32") : "", model.layout().num_parameters());
}

void add(CLI::App& app) {
  auto o = std::make_shared<ConvertFlags>();
  auto* sub = app.add_subcommand(
      "convert",
      "Convert between checkpoint directories (ours = Hugging Face layout) and llm.c .bin files, or to GGUF");
  sub->add_option("--input", o->input, "A checkpoint directory (ours or Hugging Face GPT-2) or an llm.c .bin")
      ->required();
  sub->add_option("--out", o->out, "Output directory (hf) or file (llmc, gguf)")->required();
  sub->add_option("--to", o->to,
                  "Output format: hf (directory), llmc (file) or gguf (file for llama.cpp); default: hf from an "
                  "llm.c file, else llmc")
      ->check(CLI::IsMember({"hf", "llmc", "gguf"}));
  sub->add_option(
         "--dtype", o->dtype,
         "Output precision: fp32 (or f32) or bf16 (llmc: version 3 or 5); fp32, f16 or q8_0 (gguf: matmul weights "
         "and token embeddings)")
      ->check(CLI::IsMember({"fp32", "f32", "bf16", "f16", "q8_0"}))
      ->capture_default_str();
  sub->add_flag("--force", o->force, "Replace an existing output");
  sub->callback([o] { run_convert(*o); });
}

GPT2LAB_COMMAND(41, add);

}  // namespace
}  // namespace gpt2lab::cli::convert_command
