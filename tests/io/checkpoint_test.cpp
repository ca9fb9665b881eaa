// Checkpoint round trips and rejection of damaged or mismatched files.
#include "gpt2lab/io/checkpoint.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "io/llmc.h"
#include "io/safetensors.h"

namespace gpt2lab {
namespace {

class CheckpointTest : public test::ScratchDir {
 protected:
  GPT2<float> make_model(NormPlacement norm = NormPlacement::pre, EmbeddingScale scale = EmbeddingScale::none) {
    ModelConfig c = make_config(2, 2, 16, 8, 37, norm, InitScheme::gpt2);
    c.embedding_scale = scale;
    GPT2<float> m(c);
    m.init_weights(11);
    return m;
  }

  // Expects load_model to throw an Error whose message contains `needle`.
  void expect_load_error(const fs::path& d, const std::string& needle) {
    test::expect_refused([&] { load_model(d); }, {needle});
  }
};

TEST_F(CheckpointTest, SaveLoadSaveIsByteIdentical) {
  for (NormPlacement norm : {NormPlacement::pre, NormPlacement::post}) {
    GPT2<float> m = make_model(norm);
    save_model(dir_ / "a", m, false);
    GPT2<float> loaded = load_model(dir_ / "a");
    EXPECT_EQ(loaded.config().norm, norm);
    for (const auto& t : m.layout().tensors())
      for (size_t i = 0; i < t.numel; ++i) ASSERT_EQ(m.params()[t.offset + i], loaded.params()[t.offset + i]) << t.name;
    save_model(dir_ / "b", loaded, false);
    for (const char* f : {kConfigFile, kWeightsFile})
      EXPECT_EQ(read_file(dir_ / "a" / f, SIZE_MAX), read_file(dir_ / "b" / f, SIZE_MAX)) << f;
    fs::remove_all(dir_ / "a");
    fs::remove_all(dir_ / "b");
  }
}

TEST_F(CheckpointTest, WeightsFileUsesHuggingFaceNamesAndConv1DShapes) {
  save_model(dir_ / "m", make_model(), false);
  SafetensorsFile f = SafetensorsFile::open(dir_ / "m" / kWeightsFile);
  ASSERT_NE(f.find("transformer.h.1.attn.c_attn.weight"), nullptr);
  EXPECT_EQ(f.find("transformer.h.1.attn.c_attn.weight")->shape, (std::vector<int64_t>{16, 48}));
  EXPECT_EQ(f.find("transformer.h.0.mlp.c_proj.weight")->shape, (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(f.find("transformer.wte.weight")->shape, (std::vector<int64_t>{37, 16}));  // unpadded
  EXPECT_EQ(f.metadata().at("format"), "pt");
  auto cfg = nlohmann::json::parse(read_file(dir_ / "m" / kConfigFile, SIZE_MAX));
  EXPECT_EQ(cfg["n_positions"], 8);
  EXPECT_EQ(cfg["norm"], "pre");
  EXPECT_EQ(cfg["init"], "gpt2");
  EXPECT_EQ(cfg["residual_scale"], true);
}

TEST_F(CheckpointTest, EmbeddingScaleRoundTripsAndOldCheckpointsAreUnscaled) {
  const GPT2<float> m = make_model(NormPlacement::pre, EmbeddingScale::sqrt);
  save_model(dir_ / "m", m, false);
  auto cfg = nlohmann::json::parse(read_file(dir_ / "m" / kConfigFile, SIZE_MAX));
  EXPECT_EQ(cfg["embedding_scale"], "sqrt");
  EXPECT_EQ(load_config(dir_ / "m").embedding_scale, EmbeddingScale::sqrt);
  // A checkpoint written before the field existed is GPT-2's.
  cfg.erase("embedding_scale");
  write_file_atomic(dir_ / "m" / kConfigFile, cfg.dump());
  EXPECT_EQ(load_config(dir_ / "m").embedding_scale, EmbeddingScale::none);
  save_model(dir_ / "plain", make_model(), false);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir_ / "plain" / kConfigFile, SIZE_MAX))["embedding_scale"], "none");
}

// Hugging Face's GPT-2 and llm.c would both run a scaled model as plain
// GPT-2: the first is told it is not one, the second is not written.
TEST_F(CheckpointTest, EmbeddingScaleIsNotExportedAsPlainGpt2) {
  const GPT2<float> m = make_model(NormPlacement::pre, EmbeddingScale::sqrt);
  save_model(dir_ / "m", m, false);
  const auto cfg = nlohmann::json::parse(read_file(dir_ / "m" / kConfigFile, SIZE_MAX));
  EXPECT_EQ(cfg["model_type"], "gpt2lab");
  EXPECT_EQ(cfg["architectures"], nlohmann::json::array({"Gpt2labLMHeadModel"}));
  test::expect_refused([&] { save_llmc(dir_ / "m.bin", m, false); }, {"llm.c", "embedding_scale sqrt"});
  EXPECT_FALSE(fs::exists(dir_ / "m.bin"));
  save_model(dir_ / "plain", make_model(), false);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir_ / "plain" / kConfigFile, SIZE_MAX))["model_type"], "gpt2");
}

// Every placement and norm type: save -> load -> save byte-identical, the
// config read back as written, Hugging Face told it is not GPT-2 and the
// llm.c export refused (neither format can say what these models compute).
TEST_F(CheckpointTest, EveryPlacementAndNormTypeRoundTripsAndIsNotExportedAsGpt2) {
  struct Case {
    NormPlacement norm;
    NormType type;
    InitScheme init;
  };
  const Case cases[] = {{NormPlacement::pre, NormType::rmsnorm, InitScheme::small},
                        {NormPlacement::post, NormType::rmsnorm, InitScheme::gpt2},
                        {NormPlacement::sandwich, NormType::layernorm, InitScheme::gpt2},
                        {NormPlacement::sandwich, NormType::rmsnorm, InitScheme::gpt2},
                        {NormPlacement::deepnorm, NormType::layernorm, InitScheme::xavier},
                        {NormPlacement::rezero, NormType::layernorm, InitScheme::xavier},
                        {NormPlacement::none, NormType::layernorm, InitScheme::t_fixup}};
  for (const Case& k : cases) {
    ModelConfig c = make_config(2, 2, 16, 8, 37, k.norm, k.init);
    c.norm_type = k.type;
    SCOPED_TRACE(std::string(to_string(k.norm)) + " " + to_string(k.type) + " " + to_string(k.init));
    GPT2<float> m(c);
    m.init_weights(11);
    for (const auto& o : m.layout().layers)
      if (o.alpha != kAbsent) m.params()[o.alpha] = 0.25f;  // a trained ReZero alpha
    save_model(dir_ / "a", m, false);
    const GPT2<float> loaded = load_model(dir_ / "a");
    const ModelConfig& r = loaded.config();
    EXPECT_EQ(r.norm, k.norm);
    EXPECT_EQ(r.norm_type, k.type);
    EXPECT_EQ(r.init, k.init);
    EXPECT_EQ(r.final_norm, c.final_norm);
    EXPECT_EQ(r.residual_scale, c.residual_scale);
    ASSERT_EQ(loaded.buffer_size(), m.buffer_size());
    for (const auto& t : m.layout().tensors())
      for (size_t i = 0; i < t.numel; ++i) ASSERT_EQ(m.params()[t.offset + i], loaded.params()[t.offset + i]) << t.name;
    save_model(dir_ / "b", loaded, false);
    for (const char* f : {kConfigFile, kWeightsFile})
      EXPECT_EQ(read_file(dir_ / "a" / f, SIZE_MAX), read_file(dir_ / "b" / f, SIZE_MAX)) << f;
    const auto cfg = nlohmann::json::parse(read_file(dir_ / "a" / kConfigFile, SIZE_MAX));
    EXPECT_EQ(cfg["model_type"], "gpt2lab");
    EXPECT_EQ(cfg["norm_type"], to_string(k.type));
    test::expect_refused([&] { save_llmc(dir_ / "m.bin", m, false); }, {"llm.c"});
    EXPECT_FALSE(fs::exists(dir_ / "m.bin"));
    fs::remove_all(dir_ / "a");
    fs::remove_all(dir_ / "b");
  }
  // A checkpoint written before norm_type existed is LayerNorm.
  save_model(dir_ / "old", make_model(), false);
  auto cfg = nlohmann::json::parse(read_file(dir_ / "old" / kConfigFile, SIZE_MAX));
  EXPECT_EQ(cfg["norm_type"], "layernorm");
  cfg.erase("norm_type");
  write_file_atomic(dir_ / "old" / kConfigFile, cfg.dump());
  EXPECT_EQ(load_config(dir_ / "old").norm_type, NormType::layernorm);
}

// The config decides which tensors the weights must hold: a sandwich config
// over Pre-LN weights lacks the output norms, an RMSNorm one has biases too many.
TEST_F(CheckpointTest, WeightsOfAnotherPlacementOrNormTypeAreRejected) {
  save_model(dir_ / "m", make_model(), false);
  const fs::path c = dir_ / "m" / kConfigFile;
  auto cfg = nlohmann::json::parse(read_file(c, SIZE_MAX));
  cfg["norm"] = "sandwich";
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "missing tensor 'transformer.h.0.ln_1_post.weight'");
  cfg["norm"] = "pre";
  cfg["norm_type"] = "rmsnorm";
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "unexpected tensor");
  cfg["norm_type"] = "layernorm";
  cfg["norm"] = "rezero";
  cfg["final_norm"] = false;
  cfg["residual_scale"] = false;
  cfg["init"] = "xavier";
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "unexpected tensor 'transformer.h.0.ln_1");  // rezero has no block norms
}

TEST_F(CheckpointTest, RefusesToClobberExistingData) {
  fs::create_directories(dir_ / "notes");
  write_file_atomic(dir_ / "notes" / "todo.txt", "keep me");
  EXPECT_THROW(save_model(dir_ / "notes", make_model(), true), Error);
  EXPECT_EQ(read_file(dir_ / "notes" / "todo.txt", SIZE_MAX), "keep me");
  save_model(dir_ / "m", make_model(), false);
  EXPECT_THROW(save_model(dir_ / "m", make_model(), false), Error);
  save_model(dir_ / "m", make_model(NormPlacement::post), true);  // explicit overwrite
  EXPECT_EQ(load_config(dir_ / "m").norm, NormPlacement::post);
  // No staging directories are left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 2);
}

TEST_F(CheckpointTest, TruncatedWeightsAreRejected) {
  save_model(dir_ / "m", make_model(), false);
  const fs::path w = dir_ / "m" / kWeightsFile;
  const std::string full = read_file(w, SIZE_MAX);
  for (size_t keep : {size_t(0), size_t(5), size_t(100), full.size() / 2, full.size() - 1}) {
    write_file_atomic(w, full.substr(0, keep));
    SCOPED_TRACE(keep);
    expect_load_error(dir_ / "m", keep < 8 ? "too short" : "truncated");
  }
}

TEST_F(CheckpointTest, CorruptHeadersAreRejected) {
  save_model(dir_ / "m", make_model(), false);
  const fs::path w = dir_ / "m" / kWeightsFile;
  const std::string full = read_file(w, SIZE_MAX);
  auto with_header = [&](const std::string& json) {
    const std::string& h = json;
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
    write_file_atomic(w, out + h + std::string(64, '\0'));
  };
  std::string bad = full;
  bad[7] = '\x7f';  // header length ~2^63
  write_file_atomic(w, bad);
  expect_load_error(dir_ / "m", "header length");
  with_header("{not json");
  expect_load_error(dir_ / "m", "not valid JSON");
  with_header(R"({"transformer.wte.weight": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})");
  expect_load_error(dir_ / "m", "dtype 'I64'");
  with_header(R"({"x": {"dtype": "F32", "shape": [1099511627776], "data_offsets": [0, 4]}})");
  expect_load_error(dir_ / "m", "do not match its shape");
  with_header(R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1000016]}})");
  expect_load_error(dir_ / "m", "outside");
  with_header(R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})");
  expect_load_error(dir_ / "m", "non-negative");
  with_header(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                  "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})");
  expect_load_error(dir_ / "m", "overlap");
}

TEST_F(CheckpointTest, ConfigThatDisagreesWithTheWeightsIsRejected) {
  save_model(dir_ / "m", make_model(), false);
  const fs::path c = dir_ / "m" / kConfigFile;
  auto cfg = nlohmann::json::parse(read_file(c, SIZE_MAX));
  cfg["n_embd"] = 32;
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "config.json implies");
  cfg["n_embd"] = 16;
  cfg["n_layer"] = 3;
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "missing tensor 'transformer.h.2");
  cfg["n_layer"] = 1;
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "unexpected tensor");
  cfg["n_layer"] = "two";
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "'n_layer' must be an integer");
  cfg["n_layer"] = 2;
  cfg["n_head"] = 3;
  write_file_atomic(c, cfg.dump());
  expect_load_error(dir_ / "m", "divisible");
  write_file_atomic(c, "{\"n_layer\": 2,");
  expect_load_error(dir_ / "m", "not valid JSON");
  fs::remove(c);
  expect_load_error(dir_ / "m", "no config.json");
}

TEST(Safetensors, HalfPrecisionConversions) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.5f)), 1.5f);
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256.0f), f32_to_bf16(1.0f));  // ties to even
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
}

}  // namespace
}  // namespace gpt2lab
