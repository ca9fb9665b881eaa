// The chat template: the documented default layout, a file that overrides
// some of its strings, and files refused naming the file and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "serve/chat_template.h"
#include "test_util.h"

namespace gpt2lab::serve {
namespace {

using test::expect_refused;

class ChatTemplateFile : public test::ScratchDir {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST(ChatTemplate, DefaultRendersTheDocumentedLayout) {
  const std::vector<ChatMessage> chat = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Name a colour.\nOne word."}};
  EXPECT_EQ(render_chat(ChatTemplate{}, chat),
            "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\nHello.\n<|user|>\nName a colour.\nOne word.\n"
            "<|assistant|>\n");
  // OpenAI's "developer" is the system turn.
  EXPECT_EQ(render_chat(ChatTemplate{}, {{"developer", "x"}}), "<|system|>\nx\n<|assistant|>\n");
}

TEST_F(ChatTemplateFile, OverridesSomeStringsAndKeepsTheRest) {
  const ChatTemplate t = read_chat_template(
      write("t.json", R"({"begin": "<|endoftext|>", "user": "Q: ", "assistant": "A:", "end_of_turn": "\n\n"})"));
  EXPECT_EQ(t.system, "<|system|>\n");
  EXPECT_EQ(render_chat(t, {{"system", "S"}, {"user", "why?"}}), "<|endoftext|><|system|>\nS\n\nQ: why?\n\nA:");
}

TEST_F(ChatTemplateFile, BadFilesAreRefusedNamingFileAndField) {
  const std::string unknown = write("unknown.json", R"({"usr": "U: "})");
  expect_refused([&] { read_chat_template(unknown); }, {unknown, "unknown field \"usr\"", "end_of_turn"});
  const std::string number = write("number.json", R"({"user": 3})");
  expect_refused([&] { read_chat_template(number); }, {number, "user must be a string of at most 256 bytes, got 3"});
  const std::string empty = write("empty.json", R"({"end_of_turn": ""})");
  expect_refused([&] { read_chat_template(empty); }, {empty, "end_of_turn must not be empty"});
  const std::string longer = write("long.json", R"({"system": ")" + std::string(257, 'x') + R"("})");
  expect_refused([&] { read_chat_template(longer); }, {longer, "system must be a string of at most 256 bytes"});
  const std::string list = write("list.json", R"(["user"])");
  expect_refused([&] { read_chat_template(list); }, {list, "must be a JSON object"});
  const std::string broken = write("broken.json", R"({"user": )");
  expect_refused([&] { read_chat_template(broken); }, {broken});
  expect_refused([&] { read_chat_template((dir_ / "missing.json").string()); }, {"missing.json"});
}

TEST_F(ChatTemplateFile, TheCheckpointsOwnIsUsedUnlessOneIsNamed) {
  EXPECT_EQ(chat_template_for(dir_.string(), "").user, "<|user|>\n");  // none beside the model: the default
  write("chat_template.json", R"({"user": "beside: "})");
  EXPECT_EQ(chat_template_for(dir_.string(), "").user, "beside: ");
  const std::string named = write("named.json", R"({"user": "named: "})");
  EXPECT_EQ(chat_template_for(dir_.string(), named).user, "named: ");
  write("chat_template.json", R"({"user": 1})");  // a bad one beside the model is an error, not ignored
  expect_refused([&] { chat_template_for(dir_.string(), ""); }, {"chat_template.json", "user must be a string"});
}

}  // namespace
}  // namespace gpt2lab::serve
