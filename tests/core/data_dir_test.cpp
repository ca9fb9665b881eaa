// The default data folder is $GPT2LAB_DATA or data/ of the working
// directory, never the source tree the program was compiled from (a second
// checkout or an installed program once read and wrote the first tree's).
#include "core/data_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab {
namespace {

// Sets or unsets GPT2LAB_DATA for one test and restores it after.
class DataEnv {
 public:
  explicit DataEnv(const char* value) {
    if (const char* old = std::getenv("GPT2LAB_DATA")) saved_ = old;
    had_ = std::getenv("GPT2LAB_DATA") != nullptr;
    if (value)
      ::setenv("GPT2LAB_DATA", value, 1);
    else
      ::unsetenv("GPT2LAB_DATA");
  }
  ~DataEnv() {
    if (had_)
      ::setenv("GPT2LAB_DATA", saved_.c_str(), 1);
    else
      ::unsetenv("GPT2LAB_DATA");
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST(DataDirectory, DefaultsToDataOfTheWorkingDirectory) {
  const DataEnv env(nullptr);
  EXPECT_EQ(data_directory(), std::filesystem::path("data"));
  EXPECT_EQ(default_dataset_dir(), std::filesystem::path("data/sotu_gpt2"));
  EXPECT_EQ(default_corpus_dir(), std::filesystem::path("data/sotu"));
  EXPECT_NE(data_directory_origin().find("working directory"), std::string::npos);
  EXPECT_NE(data_directory_origin().find("GPT2LAB_DATA"), std::string::npos);
}

TEST(DataDirectory, EmptyVariableMeansUnset) {
  const DataEnv env("");
  EXPECT_EQ(data_directory(), std::filesystem::path("data"));
}

TEST(DataDirectory, FollowsTheVariable) {
  const DataEnv env("/somewhere/else");
  EXPECT_EQ(data_directory(), std::filesystem::path("/somewhere/else"));
  EXPECT_EQ(default_dataset_dir(), std::filesystem::path("/somewhere/else/sotu_gpt2"));
  EXPECT_EQ(data_directory_origin(), "from $GPT2LAB_DATA");
}

TEST(DataDirectory, Gpt2TokenizerErrorNamesThePathAndTheVariable) {
  const DataEnv env("/nonexistent/gpt2lab-data");
  try {
    Tokenizer::resolve("gpt2");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'/nonexistent/gpt2lab-data/gpt2'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("from $GPT2LAB_DATA"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace gpt2lab
