#include "serve/server.h"

#include <httplib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/signals.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "serve/endpoints.h"

namespace gpt2lab::serve {

namespace {

// What each path answers to; anything else is refused before its body is read.
const char* allowed_method(const std::string& path) {
  if (path == "/health" || path == "/v1/models" || path == "/models" || path == "/metrics") return "GET";
  if (path == "/v1/completions" || path == "/completions" || path == "/tokenize" || path == "/detokenize")
    return "POST";
  return nullptr;
}

// Compares in time independent of where the strings differ.
bool same_key(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  return diff == 0;
}

// Method, path and key are checked before any body is read, so that a
// refused request costs no memory. (httplib then reads an unread body as
// further requests, each refused with 400: slow, but bounded by the body.)
httplib::Server::HandlerResponse admit(const ServeOptions& o, const httplib::Request& req, httplib::Response& res) {
  const char* method = allowed_method(req.path);
  if (!method) {
    send_error(res, 404, "invalid_request_error",
               "no endpoint " + req.path +
                   " (this server has /v1/completions, /v1/models, /health, /metrics, /tokenize, /detokenize)");
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
    return httplib::Server::HandlerResponse::Unhandled;
  }
  return httplib::Server::HandlerResponse::Handled;
}

void configure(httplib::Server& server, const ServeOptions& o) {
  // Handlers wait for the one generation worker; a few threads more than
  // the queue holds keep /health, refusals and 429s answered while it is full.
  const size_t connections = o.max_requests + 4;
  server.new_task_queue = [connections] { return new httplib::ThreadPool(connections); };
  server.set_read_timeout(o.timeout_s, 0);
  server.set_write_timeout(o.timeout_s, 0);
  server.set_keep_alive_timeout(5);
  server.set_payload_max_length(drain_limit(o.max_body_bytes));
  server.set_pre_routing_handler(
      [&o](const httplib::Request& req, httplib::Response& res) { return admit(o, req, res); });
  // httplib's own refusals (a bad request line, 413, ...) in OpenAI's shape.
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      send_error(res, res.status, "invalid_request_error",
                 "the request was refused (HTTP " + std::to_string(res.status) +
                     "): a malformed request, a body over the limit, or a header too long");
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
    send_error(res, 500, "server_error", "internal error while handling the request");
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

void serve(const ServeOptions& o) {
  check(o.max_requests >= 1 && o.max_body_bytes >= 1 && o.max_choices >= 1 && o.timeout_s >= 1,
        "serve: --max-requests, --max-body, --max-choices and --timeout must be at least 1");
  set_threads(o.threads);
  const GPT2<float> model = load_model(o.model_dir);
  const Tokenizer tok = checkpoint_tokenizer(o.model_dir, o.tokenizer);
  ServerState state{o, {model, tok, model_name(o)}, {}, {o.max_choices}, nullptr, {}};
  state.base.eot_id = tok.eot_id();
  state.base.weights = o.weights;
  state.base.packed = pack_decode_weights(model, o.weights);
  httplib::Server server;
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
