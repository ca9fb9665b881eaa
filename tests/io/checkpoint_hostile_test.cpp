// Hostile checkpoint directories and llm.c model files: configs whose sizes
// would need terabytes, zero or negative fields, numbers that do not fit,
// weights files that lack what the config promises. Each is refused with an
// Error naming the file and field, before the model is allocated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "../alloc_watch.h"
#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/model/config.h"
#include "io/llmc.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace gpt2lab {
namespace {

using testing::expect_refused_without_allocating;

class CheckpointHostile : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    GPT2<float> m(make_config(1, 2, 8, 16, 64, NormPlacement::pre, InitScheme::gpt2));
    m.init_weights(3);
    save_model(dir_ / "good", m, false);
    good_config_ = nlohmann::json::parse(read_file(dir_ / "good" / kConfigFile, SIZE_MAX));
  }

  // The good checkpoint with config.json replaced by `config`.
  fs::path with_config(const std::string& config) {
    fs::path d = dir_ / "bad";
    fs::remove_all(d);
    fs::create_directories(d);
    fs::copy_file(dir_ / "good" / kWeightsFile, d / kWeightsFile);
    write_file_atomic(d / kConfigFile, config);
    return d;
  }
  fs::path with_field(const std::string& key, const nlohmann::json& value) {
    nlohmann::json c = good_config_;
    c[key] = value;
    return with_config(c.dump());
  }
  void expect_refused(const fs::path& d, std::initializer_list<std::string> needles) {
    expect_refused_without_allocating([&] { load_model(d); }, needles, "a hostile checkpoint");
  }

  nlohmann::json good_config_;
};

TEST_F(CheckpointHostile, SizesThatDoNotFitAnIntAreRefused) {
  expect_refused(with_field("n_layer", int64_t(1) << 40), {"config.json", "'n_layer'", "out of range"});
  expect_refused(with_field("vocab_size", uint64_t(-1)), {"config.json", "'vocab_size'"});
  expect_refused(with_field("n_embd", 1e300), {"config.json", "'n_embd'", "integer"});
}

TEST_F(CheckpointHostile, ZeroAndNegativeSizesAreRefused) {
  expect_refused(with_field("vocab_size", 0), {"config.json", "'vocab_size'"});
  expect_refused(with_field("n_head", -2), {"config.json", "'n_head'"});
  expect_refused(with_field("n_positions", 0), {"config.json", "'n_positions'"});
  expect_refused(with_field("n_layer", "12"), {"config.json", "'n_layer'", "integer"});
}

TEST_F(CheckpointHostile, ConfigImplyingATerabyteModelIsRefusedBeforeAllocating) {
  // Each field is within its own limit; together: 4096 layers of 65536
  // channels, ~2e14 parameters.
  nlohmann::json c = good_config_;
  c["n_layer"] = 4096;
  c["n_embd"] = 65536;
  c["n_head"] = 64;
  expect_refused(with_config(c.dump()), {"config.json", "parameters", "too large"});
}

TEST_F(CheckpointHostile, LargeButAllowedConfigWithSmallWeightsIsRefusedBeforeAllocating) {
  // ~10 G parameters pass the config's own limits; the weights file lacks
  // them, which must be found before 40 GB of model are allocated.
  nlohmann::json c = good_config_;
  c["n_layer"] = 48;
  c["n_embd"] = 4096;
  c["n_head"] = 32;
  expect_refused(with_config(c.dump()), {"model.safetensors", "tensor"});
}

TEST_F(CheckpointHostile, EpsilonOutOfRangeIsRefused) {
  expect_refused(with_field("layer_norm_epsilon", 1e300), {"config.json", "layer_norm_epsilon"});
  expect_refused(with_field("layer_norm_epsilon", -1), {"config.json", "layer_norm_epsilon"});
  expect_refused(with_field("layer_norm_epsilon", "1e-5"), {"config.json", "layer_norm_epsilon"});
}

TEST_F(CheckpointHostile, MalformedConfigFilesAreRefused) {
  expect_refused(with_config("[1, 2]"), {"config.json", "object"});
  expect_refused(with_config("{\"n_layer\": "), {"config.json", "not valid JSON"});
  expect_refused(with_config(""), {"config.json", "not valid JSON"});
  expect_refused(with_field("norm", "sideways"), {"config.json", "norm"});
  expect_refused(with_field("final_norm", 1), {"config.json", "'final_norm'"});
  expect_refused(with_field("embedding_scale", "cube"),
                 {"config.json", "embedding_scale", "'cube'", "none, sqrt or unit"});
  expect_refused(with_field("embedding_scale", 2), {"config.json", "'embedding_scale'", "string"});
  expect_refused(with_field("norm_type", "batchnorm"),
                 {"config.json", "norm_type", "'batchnorm'", "layernorm or rmsnorm"});
  expect_refused(with_field("norm_type", true), {"config.json", "'norm_type'", "string"});
  expect_refused(with_field("init", "t-fixup"), {"config.json", "t-fixup is for a model without norms"});
}

TEST_F(CheckpointHostile, WeightsThatLackOrMisshapeTensorsAreRefused) {
  const fs::path d = with_config(good_config_.dump());
  // Replace the weights with one tensor of the wrong shape.
  std::vector<float> z(8 * 64, 0.0f);
  write_safetensors(d / kWeightsFile, {{"wte.weight", {8, 64}, z.data()}}, {});
  expect_refused(d, {"model.safetensors", "'wte.weight'", "shape (8, 64)"});
  write_safetensors(d / kWeightsFile, {{"h.0.nonsense", {8}, z.data()}}, {});
  expect_refused(d, {"model.safetensors", "unexpected tensor 'h.0.nonsense'"});
}

// ------------------------------------------------ llm.c model files

class LlmcHostile : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    path_ = dir_ / "model.bin";
  }
  // A header (magic, version 3, then the given fields) plus `blob` bytes.
  void write(std::initializer_list<int32_t> fields, size_t blob, int32_t version = 3) {
    int32_t h[256] = {};
    h[0] = kLlmcMagic;
    h[1] = version;
    int i = 2;
    for (int32_t f : fields) h[i++] = f;
    std::string bytes(reinterpret_cast<const char*>(h), sizeof h);
    bytes += std::string(blob, '\0');
    write_file_atomic(path_, bytes);
  }
  void expect_refused(std::initializer_list<std::string> needles) {
    expect_refused_without_allocating([&] { load_llmc(path_); }, needles, "a hostile llm.c file", path_.string());
  }
  fs::path path_;
};

// Field order after magic and version: max_seq_len, vocab_size, num_layers,
// num_heads, channels, padded_vocab_size.
TEST_F(LlmcHostile, ZeroAndNegativeFieldsAreRefusedNamingTheField) {
  write({1024, 0, 12, 12, 768, 50304}, 64);
  expect_refused({"vocab_size", "offset 12"});
  write({1024, 50257, -12, 12, 768, 50304}, 64);
  expect_refused({"num_layers", "offset 16"});
  write({1024, 50257, 12, 12, 768, 100}, 64);
  expect_refused({"padded_vocab_size 100", "vocab_size 50257"});
}

TEST_F(LlmcHostile, HugeModelInASmallFileIsRefusedBeforeAllocating) {
  // 2^31-1 padded vocab x 65536 channels: 2^47 parameters claimed.
  write({1024, 50257, 1, 1, 65536, INT32_MAX}, 64);
  expect_refused({"bytes", "header implies"});
  // Allowed sizes (GPT-2 XL) but a 64-byte blob.
  write({1024, 50257, 48, 25, 1600, 50304}, 64);
  expect_refused({"bytes, but the header implies", "truncated"});
}

TEST_F(LlmcHostile, HugeFileIsRefusedByItsHeaderBeforeItIsRead) {
  // A small model's header on a 64 GiB (sparse) file: the size is checked
  // against the header before a byte of the weights is read.
  write({64, 97, 1, 1, 16, 128}, 0);
  fs::resize_file(path_, uintmax_t{1} << 36);
  expect_refused({"68719476736 bytes, but the header implies"});
}

TEST_F(LlmcHostile, BadMagicVersionAndTruncationAreRefused) {
  write({1024, 50257, 12, 12, 768, 50304}, 0, 4);
  expect_refused({"version 4", "offset 4"});
  write_file_atomic(path_, std::string(100, '\0'));
  expect_refused({"100 bytes", "header"});
  std::string bytes(1024, '\0');
  write_file_atomic(path_, bytes);
  expect_refused({"bad magic 0", "offset 0"});
}

}  // namespace
}  // namespace gpt2lab
