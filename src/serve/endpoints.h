// The endpoints of `gpt2lab serve` (serve/server.h) on a cpp-httplib
// server, and OpenAI's error JSON. Bodies are read through a content reader
// so that their size is bounded however they are sent (chunked, gzip).
#pragma once

#include <httplib.h>

#include <string>

#include "gpt2lab/sample/generate.h"
#include "serve/chat_template.h"
#include "serve/completion.h"
#include "serve/completion_request.h"
#include "serve/scheduler.h"
#include "serve/server.h"
#include "serve/stats.h"

namespace gpt2lab::serve {

struct ServerState {
  const ServeOptions& options;
  ServedModel model;
  SamplingOptions base;  // weights, packed weights, end of text
  RequestLimits limits;
  Scheduler* scheduler = nullptr;
  ServeStats stats;
  ChatTemplate chat_template;  // /v1/chat/completions' (serve/chat_template.h)
};

// {"error": {"message", "type", "param", "code"}}; empty param and code are null.
nlohmann::json error_json(const std::string& type, const std::string& message, const std::string& param = "",
                          const std::string& code = "");
// error_json() as the response, with `status`.
void send_error(httplib::Response& res, int status, const std::string& type, const std::string& message,
                const std::string& param = "", const std::string& code = "");
// JSON text; bytes that are not UTF-8 (none should be) become U+FFFD.
std::string dumped(const nlohmann::json& j);
void send_json(httplib::Response& res, const nlohmann::json& body);

// The body as JSON, at most max_bytes of it however it is sent (chunked,
// compressed); false when an error response was set instead (and the
// connection closes after it: the rest of the body is not read).
bool read_json_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes,
                    httplib::Response& res, nlohmann::json& out);

// POST /v1/completions (serve/completions_endpoint.cpp).
void completions(ServerState& s, const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& reader);

// POST /v1/chat/completions (serve/chat_endpoint.cpp).
void chat_completions(ServerState& s, const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader& reader);

// POST /v1/embeddings (serve/embeddings_endpoint.cpp).
void embeddings(ServerState& s, const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader& reader);

void add_routes(httplib::Server& server, ServerState& state);

}  // namespace gpt2lab::serve
