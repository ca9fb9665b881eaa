// gpt2lab serve: one model behind OpenAI-style HTTP endpoints (serve/server.h).
#include "cli/command.h"
#include "gpt2lab/core/error.h"
#include "serve/server.h"

namespace gpt2lab::cli::serve_command {
namespace {

void add_flags(CLI::App* sub, serve::ServeOptions& o) {
  sub->add_option("--model", o.model_dir, "Checkpoint directory: ours, or a Hugging Face GPT-2")->required();
  sub->add_option("--host", o.host, "Address to listen on (the default takes connections from this machine only)")
      ->capture_default_str();
  sub->add_option("--port", o.port, "Port to listen on (0 = any free one; the chosen one is printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  add_threads_flag(sub, o.threads);
  add_weights_flag(sub, o.weights);
  sub->add_option("--tokenizer", o.tokenizer, "gpt2 or a directory (default: the one recorded with the model)");
  sub->add_option("--chat-template", o.chat_template,
                  "Chat template JSON for /v1/chat/completions (default: chat_template.json beside the model, "
                  "else the one docs/serve.md describes)");
  sub->add_option("--model-id", o.model_id, "The model's name in responses (default: its folder's name)");
  sub->add_option("--api-key", o.api_key,
                  "Require \"Authorization: Bearer KEY\" on every endpoint but /health (default: none; "
                  "printable ASCII, no spaces)")
      ->check(CLI::Validator(
          [](std::string& key) -> std::string {
            try {
              serve::check_api_key(key);
            } catch (const Error& e) {
              return e.what();
            }
            return "";
          },
          "KEY"));
  sub->add_option("--max-requests", o.max_requests, "Completions queued or running at once; more get 429")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  sub->add_option("--max-body", o.max_body_bytes, "Largest request body in bytes; larger gets 413")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  sub->add_option("--max-choices", o.max_choices, "Most choices (prompts x n) in one request")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sub->add_option("--timeout", o.timeout_s, "Seconds a connection may take for each read or write")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_option("--request-timeout", o.request_timeout_s,
                  "Seconds a request (line, headers and body) may take to arrive; later gets 408")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_flag("--quiet", o.quiet, "No line per request on stderr");
}

void add(CLI::App& app) {
  auto o = std::make_shared<serve::ServeOptions>();
  auto* sub = app.add_subcommand("serve", "Serve a model over HTTP with OpenAI-style endpoints (/v1/completions)");
  add_flags(sub, *o);
  sub->callback([o] { serve::serve(*o); });
}

GPT2LAB_COMMAND(42, add);

}  // namespace
}  // namespace gpt2lab::cli::serve_command
