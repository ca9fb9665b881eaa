#include "serve/chat_template.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "serve/request_fields.h"

namespace gpt2lab::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kMaxTemplateFileBytes = 64 << 10;

struct Field {
  const char* key;
  std::string ChatTemplate::*member;
};
constexpr Field kFields[] = {{"begin", &ChatTemplate::begin},
                             {"system", &ChatTemplate::system},
                             {"user", &ChatTemplate::user},
                             {"assistant", &ChatTemplate::assistant},
                             {"end_of_turn", &ChatTemplate::end_of_turn}};

const Field* field_named(const std::string& key) {
  for (const Field& f : kFields)
    if (key == f.key) return &f;
  return nullptr;
}

}  // namespace

ChatTemplate read_chat_template(const std::string& path) {
  const std::string where = "chat template " + path;
  const json j = read_json_file(path, kMaxTemplateFileBytes);
  check(j.is_object(), where + ": must be a JSON object of strings (begin, system, user, assistant, end_of_turn)");
  ChatTemplate t;
  for (const auto& [key, value] : j.items()) {
    const Field* f = field_named(key);
    check(f, where + ": unknown field " + shown(json(key)) +
                 " (a template has begin, system, user, assistant and end_of_turn)");
    check(value.is_string() && value.get_ref<const std::string&>().size() <= kMaxTemplateBytes,
          where + ": " + key + " must be a string of at most " + std::to_string(kMaxTemplateBytes) + " bytes, got " +
              shown(value));
    t.*(f->member) = value.get<std::string>();
  }
  check(!t.end_of_turn.empty(), where + ": end_of_turn must not be empty (generation stops at it)");
  return t;
}

ChatTemplate chat_template_for(const std::string& model_dir, const std::string& path) {
  if (!path.empty()) return read_chat_template(path);
  const fs::path beside = fs::path(model_dir) / "chat_template.json";
  std::error_code ec;
  if (fs::exists(beside, ec)) return read_chat_template(beside.string());
  return {};
}

std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  std::string text = t.begin;
  for (const ChatMessage& m : messages) {
    const std::string& marker = m.role == "user" ? t.user : m.role == "assistant" ? t.assistant : t.system;
    text += marker + m.content + t.end_of_turn;
  }
  return text + t.assistant;
}

}  // namespace gpt2lab::serve
