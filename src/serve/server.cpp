#include "serve/server.h"

#include <httplib.h>

#include <strings.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "core/signals.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "serve/connection.h"
#include "serve/endpoints.h"

namespace gpt2lab::serve {

namespace {

// What each path answers to; anything else is refused before its body is read.
bool is_model_path(const std::string& path) {
  for (const std::string prefix : {"/v1/models/", "/models/"})
    if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

const char* allowed_method(const std::string& path) {
  if (path == "/health" || path == "/v1/models" || path == "/models" || path == "/metrics" || is_model_path(path))
    return "GET";
  for (const char* post : {"/v1/completions", "/completions", "/v1/chat/completions", "/chat/completions",
                           "/v1/embeddings", "/embeddings", "/tokenize", "/detokenize"})
    if (path == post) return "POST";
  return nullptr;
}

// Compares in time independent of where the strings differ.
bool same_key(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  return diff == 0;
}

// How the body is sent, checked before any of it is read: a framing httplib
// would misread (a negative or 20-digit Content-Length reads on until the
// timeout), a body over the limit by its length, a coding or type the
// endpoints cannot read. Status 0 when none of these.
struct Refusal {
  int status = 0;
  std::string message;
};

Refusal framing(const ServeOptions& o, const httplib::Request& req) {
  const bool length = req.has_header("Content-Length"), coded = req.has_header("Transfer-Encoding");
  const std::string te = req.get_header_value("Transfer-Encoding");
  const std::string cl = req.get_header_value("Content-Length");
  if (req.get_header_value_count("Content-Length") > 1 || req.get_header_value_count("Transfer-Encoding") > 1 ||
      (length && coded))
    return {400, "send one Content-Length or Transfer-Encoding: chunked, not several"};
  if (coded && strcasecmp(te.c_str(), "chunked") != 0)
    return {501, "Transfer-Encoding " + te.substr(0, 40) + " is not supported (send chunked, or a Content-Length)"};
  if (length && (cl.empty() || cl.size() > 18 || cl.find_first_not_of("0123456789") != std::string::npos))
    return {400, "Content-Length must be a number of bytes, got \"" + cl.substr(0, 40) + "\""};
  if (length && std::stoull(cl) > o.max_body_bytes)
    return {413, "the request body (" + cl + " bytes) is larger than this server's limit of " +
                     std::to_string(o.max_body_bytes) + " bytes (--max-body)"};
  if (req.method != "POST") return {};
  // Without either, httplib would read the body until the client closes.
  if (!length && !coded) return {411, "send the body with a Content-Length (or Transfer-Encoding: chunked)"};
  const std::string ce = req.get_header_value("Content-Encoding");
  if (!(ce.empty() || ce == "identity" || ce == "gzip" || ce == "deflate" || ce == "br"))
    return {415, "Content-Encoding " + ce.substr(0, 40) + " is not supported (send gzip, deflate, br, or none)"};
  if (req.is_multipart_form_data())
    return {415, "the body must be JSON (Content-Type: application/json), not multipart/form-data"};
  return {};
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") &&
          req.get_header_value("Content-Length").find_first_not_of('0') != std::string::npos);
}

// Framing, method, path and key are checked before any body is read, so
// that a refused request costs no memory; a refused body is left unread and
// the connection closes after the reply (connection.h).
httplib::Server::HandlerResponse admit(const ServeOptions& o, const httplib::Request& req, httplib::Response& res) {
  headers_done();
  const char* method = allowed_method(req.path);
  if (const Refusal r = framing(o, req); r.status) {
    send_error(res, r.status, "invalid_request_error", r.message);
  } else if (!method) {
    send_error(res, 404, "invalid_request_error",
               "no endpoint " + req.path +
                   " (this server has /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/models, "
                   "/v1/models/{id}, /health, /metrics, /tokenize, "
                   "/detokenize)");
  } else if (req.method != method) {
    res.set_header("Allow", method);
    send_error(res, 405, "invalid_request_error", req.path + " takes " + method + ", not " + req.method);
  } else if (!o.api_key.empty() && req.path != "/health" &&
             !same_key(req.get_header_value("Authorization"), "Bearer " + o.api_key)) {
    res.set_header("WWW-Authenticate", "Bearer");
    const bool missing = !req.has_header("Authorization");
    send_error(res, 401, "authentication_error",
               missing ? "this server needs an API key: send the header \"Authorization: Bearer KEY\""
                       : "the API key is not this server's",
               "", "invalid_api_key");
  } else {
    // A GET's body is never read: close after the reply, rather than read it as the next request.
    if (req.method != "POST" && has_body(req)) close_after_reply(res);
    return httplib::Server::HandlerResponse::Unhandled;
  }
  if (has_body(req)) close_after_reply(res);
  return httplib::Server::HandlerResponse::Handled;
}

// What httplib refused before any handler ran, for its reply (it sends
// only the status).
std::string refusal_message(int status) {
  if (request_timed_out() || request_headers_too_long()) return request_refusal_message(status);
  switch (status) {
    case 414: return "the request line is longer than 8192 bytes";
    case 416: return "the Range header is malformed (this server ignores Range and sends whole responses)";
    case 500: return "too many connections at once (a descriptor over FD_SETSIZE); retry later";
    default: return "the request line or a header is malformed";
  }
}

void configure(httplib::Server& server, const ServeOptions& o) {
  // Handlers wait for the one generation worker; a few threads more than
  // the queue holds keep /health, refusals and 429s answered while it is full.
  const size_t connections = o.max_requests + 4;
  server.new_task_queue = [connections] { return new httplib::ThreadPool(connections); };
  server.set_read_timeout(o.timeout_s, 0);
  server.set_write_timeout(o.timeout_s, 0);
  server.set_payload_max_length(o.max_body_bytes);
  server.set_default_headers({{"Accept-Ranges", "none"}});
  server.set_pre_routing_handler(
      [&o](const httplib::Request& req, httplib::Response& res) { return admit(o, req, res); });
  // curl sends "Expect: 100-continue" before a large body: refuse at once rather than invite it.
  server.set_expect_100_continue_handler([&o](const httplib::Request& req, httplib::Response& res) {
    return admit(o, req, res) == httplib::Server::HandlerResponse::Handled ? res.status : 100;
  });
  // httplib's own refusals (a bad request line, a header too long, ...) in
  // OpenAI's shape; the request's body, if any, is not read.
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int status = request_timed_out() ? 408 : request_headers_too_long() ? 431 : res.status;
    send_error(res, status, "invalid_request_error", refusal_message(status));
    close_after_reply(res);
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
    send_error(res, 500, "server_error", "internal error while handling the request");
    close_after_reply(res);  // the body may be unread
  });
  // httplib offers the connection for more requests unless the client
  // closes it; a reply that closes it must not.
  server.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.get_header_value("Connection") == "close") res.headers.erase("Keep-Alive");
  });
  if (!o.quiet)
    server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "serve: %s %s %s -> %d\n", req.remote_addr.c_str(), req.method.c_str(), req.path.c_str(),
                   res.status);
    });
}

int listen_port(httplib::Server& server, const ServeOptions& o) {
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    throw Error("serve: cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + std::strerror(errno) +
                " (another server on that port? choose one with --port, or --port 0 for any free one)");
  return port;
}

std::string model_name(const ServeOptions& o) {
  if (!o.model_id.empty()) return o.model_id;
  const fs::path p = fs::absolute(o.model_dir).lexically_normal();
  return (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
}

}  // namespace

void check_api_key(const std::string& key) {
  check(!key.empty(),
        "serve: --api-key is empty (was the variable you passed unset?); give the key, or leave --api-key out "
        "to serve without one");
  for (size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    check(c > 0x20 && c < 0x7f, "serve: --api-key has a space, control or non-ASCII character (byte " +
                                    std::to_string(c) + " at offset " + std::to_string(i) +
                                    "): a key must be printable ASCII without spaces, to be sent in a header");
  }
}

void serve(const ServeOptions& o) {
  check(o.max_requests >= 1 && o.max_body_bytes >= 1 && o.max_choices >= 1 && o.timeout_s >= 1 &&
            o.request_timeout_s >= 1,
        "serve: --max-requests, --max-body, --max-choices, --timeout and --request-timeout must be at least 1");
  if (!o.api_key.empty()) check_api_key(o.api_key);
  set_threads(o.threads);
  ChatTemplate chat = chat_template_for(o.model_dir, o.chat_template);  // a bad file fails before the model loads
  const GPT2<float> model = load_model(o.model_dir);
  const Tokenizer tok = checkpoint_tokenizer(o.model_dir, o.tokenizer);
  ServerState state{o, {model, tok, model_name(o)}, {}, {o.max_choices}, nullptr, {}, std::move(chat)};
  state.base.eot_id = tok.eot_id();
  state.base.weights = o.weights;
  state.base.packed = pack_decode_weights(model, o.weights);
  HttpServer server({o.timeout_s, o.request_timeout_s, 5, size_t{64} << 10, o.quiet});
  configure(server, o);
  add_routes(server, state);
  const int port = listen_port(server, o);
  set_graceful_stop(true);
  Scheduler scheduler(o.max_requests, o.threads);
  state.scheduler = &scheduler;
  std::atomic<bool> finished{false};
  std::thread stopper([&] {
    const auto nap = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
    while (!finished && !stop_requested()) nap();
    // stop() does nothing before the accept loop runs: a signal may come first.
    while (!finished && !server.is_running()) nap();
    server.stop();  // stop accepting; listen_after_bind returns once every connection has finished
  });
  // The CLI chose how idle threads wait from the load at start (cli/main.cpp);
  // a server lives long, so say which, for whoever reads its speed.
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("gpt2lab serve: listening on http://%s:%d (model %s, %d threads, OMP_WAIT_POLICY=%s)\n", o.host.c_str(),
              port, state.model.id.c_str(), num_threads(), policy ? policy : "unset");
  std::fflush(stdout);
  const bool ok = server.listen_after_bind();
  finished = true;
  stopper.join();
  if (stop_requested()) std::fprintf(stderr, "gpt2lab serve: stopped by a signal, every request answered\n");
  check(ok || stop_requested(), "serve: the server stopped unexpectedly (accept failed)");
}

}  // namespace gpt2lab::serve
