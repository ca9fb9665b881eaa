#include "data/prepare.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/trainer.h"

namespace gpt2lab {
namespace {

// A corpus of small documents and a tokenizer trained on it: no downloaded
// data needed.
class PrepareTest : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    root_ = dir_;
    fs::create_directories(root_ / "corpus" / "sub");
    for (int i = 0; i < 7; ++i) {
      const fs::path p = root_ / "corpus" / (i % 2 ? "sub" : ".") / ("doc" + std::to_string(i) + ".txt");
      write_file_atomic(p, "Document " + std::to_string(i) + " says hello to the world.\n");
    }
    write_file_atomic(root_ / "corpus" / ".hidden", "never read");
    save_bpe(train_bpe_on_files({root_ / "corpus"}, 280, 1), root_ / "tok");
    options_.inputs = {root_ / "corpus"};
    options_.tokenizer = (root_ / "tok").string();
    options_.out = root_ / "out";
    options_.val_every = 3;
  }
  std::string prepare_error() {
    try {
      prepare_dataset(options_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path root_;
  PrepareOptions options_;
};

TEST_F(PrepareTest, ListsDocumentsSortedSkippingHiddenFiles) {
  const auto docs = list_documents({root_ / "corpus"});
  ASSERT_EQ(docs.size(), 7u);
  EXPECT_TRUE(std::is_sorted(docs.begin(), docs.end(),
                             [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); }));
  for (const auto& d : docs) EXPECT_EQ(d.filename().string().find('.'), 4u) << d;
}

TEST_F(PrepareTest, WritesShardsAndMetaWithEveryKthDocumentInVal) {
  const PrepareSummary s = prepare_dataset(options_);
  EXPECT_EQ(s.train_documents, 5);
  EXPECT_EQ(s.val_documents, 2);  // documents 2 and 5 of 0..6
  const Tokenizer tok = Tokenizer::load(root_ / "tok");
  const auto docs = list_documents({root_ / "corpus"});
  std::vector<int> train, val;
  for (size_t i = 0; i < docs.size(); ++i) {
    auto& split = i % 3 == 2 ? val : train;
    split.push_back(tok.eot_id());
    const auto ids = tok.encode(read_file(docs[i], SIZE_MAX), false);
    split.insert(split.end(), ids.begin(), ids.end());
  }
  const TokenShard tr = TokenShard::open(options_.out / "train.bin");
  const TokenShard va = TokenShard::open(options_.out / "val.bin");
  EXPECT_EQ(std::vector<int>(tr.data(), tr.data() + tr.size()), train);
  EXPECT_EQ(std::vector<int>(va.data(), va.data() + va.size()), val);
  const auto meta = nlohmann::json::parse(read_file(options_.out / "meta.json", SIZE_MAX));
  EXPECT_EQ(meta["tokens"]["train"], train.size());
  EXPECT_EQ(meta["tokens"]["val"], val.size());
  EXPECT_EQ(meta["documents"]["val"], 2);
  EXPECT_EQ(meta["tokenizer"]["identity"], tok.identity());
  EXPECT_EQ(meta["tokenizer"]["vocab_size"], 280);
  EXPECT_EQ(meta["sources"].size(), 7u);
  EXPECT_EQ(meta["sources"][2]["split"], "val");
  // Deterministic: a second run (replacing the first) writes the same bytes.
  const std::string before = read_file(options_.out / "train.bin", SIZE_MAX);
  options_.force = true;
  prepare_dataset(options_);
  EXPECT_EQ(read_file(options_.out / "train.bin", SIZE_MAX), before);
}

TEST_F(PrepareTest, RefusesBadInputsAndWritesNothing) {
  options_.inputs = {root_ / "missing.txt"};
  EXPECT_NE(prepare_error().find("missing.txt' does not exist"), std::string::npos) << prepare_error();
  fs::create_directories(root_ / "empty");
  options_.inputs = {root_ / "empty"};
  EXPECT_NE(prepare_error().find("empty corpus"), std::string::npos) << prepare_error();
  options_.inputs = {root_ / "corpus"};
  options_.val_every = 8;
  EXPECT_NE(prepare_error().find("validation split would be empty"), std::string::npos) << prepare_error();
  options_.val_every = 3;
  options_.tokenizer = (root_ / "nope").string();
  EXPECT_NE(prepare_error().find("has no encoder.json"), std::string::npos) << prepare_error();
  EXPECT_FALSE(fs::exists(options_.out));
}

TEST_F(PrepareTest, RefusesAVocabularyTooLargeForUint16) {
  BpeVocab big;
  for (int b = 0; b < 256; ++b) big.tokens.emplace_back(1, static_cast<char>(b));
  // Two-byte tokens, each made by its merge (a tokenizer is validated on
  // load: every multi-byte token must be reachable).
  for (int i = 0; big.tokens.size() < 65536; ++i) {
    const std::string a(1, static_cast<char>(i / 256)), b(1, static_cast<char>(i % 256));
    big.tokens.push_back(a + b);
    big.merges.emplace_back(a, b);
  }
  big.tokens.emplace_back("<|endoftext|>");
  save_bpe(big, root_ / "big");
  options_.tokenizer = (root_ / "big").string();
  EXPECT_NE(prepare_error().find("at most 65536 fit"), std::string::npos) << prepare_error();
  EXPECT_FALSE(fs::exists(options_.out));
}

TEST_F(PrepareTest, RefusesToReplaceAFolderThatIsNoDataset) {
  fs::create_directories(options_.out);
  write_file_atomic(options_.out / "precious.txt", "keep me");
  EXPECT_NE(prepare_error().find("are not a prepared dataset"), std::string::npos) << prepare_error();
  EXPECT_TRUE(fs::exists(options_.out / "precious.txt"));
}

}  // namespace
}  // namespace gpt2lab
