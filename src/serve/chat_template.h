// How /v1/chat/completions turns a chat into a prompt. GPT-2 was trained on
// plain text and has no chat format; this one is plain text too, each turn
// a role marker, the message, and an end-of-turn string:
//
//   BEGIN + SYSTEM + content + END_OF_TURN + USER + content + END_OF_TURN
//         + ... + ASSISTANT
//
// ending with the assistant's marker so that the model writes its turn;
// generation stops at END_OF_TURN (or the end of text). The default
// (docs/serve.md):
//   begin ""  system "<|system|>\n"  user "<|user|>\n"
//   assistant "<|assistant|>\n"  end_of_turn "\n"
// A checkpoint tuned on another layout brings its own in
// chat_template.json beside its weights, or `serve --chat-template FILE`
// names one: a JSON object of some of those five strings (the rest keep
// their defaults).
#pragma once

#include <string>
#include <vector>

namespace gpt2lab::serve {

// At most this many bytes per template string.
inline constexpr size_t kMaxTemplateBytes = 256;

struct ChatTemplate {
  std::string begin;
  std::string system = "<|system|>\n";
  std::string user = "<|user|>\n";
  std::string assistant = "<|assistant|>\n";
  std::string end_of_turn = "\n";  // not empty: where the assistant's turn ends
};

// A message of a chat. role: "system" (or OpenAI's "developer", the same
// turn), "user" or "assistant".
struct ChatMessage {
  std::string role;
  std::string content;
};

// Reads a template file (the object described above); an Error names the
// file and the field that is wrong.
ChatTemplate read_chat_template(const std::string& path);

// The template a server uses: `path` when given (--chat-template), else
// MODEL_DIR/chat_template.json when there is one, else the default.
ChatTemplate chat_template_for(const std::string& model_dir, const std::string& path);

// The prompt of `messages` (roles already checked).
std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages);

}  // namespace gpt2lab::serve
