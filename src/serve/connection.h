// cpp-httplib's server with our own loop over each connection, for what
// httplib 0.11 cannot be told:
// - a deadline for a whole request (request line, headers and body), not
//   only for each read, so that a client that trickles a byte at a time
//   cannot hold a connection thread for longer than --request-timeout;
// - a cap on the request line and headers (httplib lets them grow);
// - Range ignored: every response is whole (httplib would cut any 200,
//   JSON and errors included, to the ranges asked for);
// - closing after a refusal that leaves a body unread, with the reply
//   delivered first: the connection's sending side is shut, and what the
//   client still sends is read and dropped until it hangs up or the
//   request's deadline passes (closing on unread data resets the
//   connection, and the client may lose the reply).
// The requests themselves are httplib's (Server::process_request).
#pragma once

#include <httplib.h>

#include <cstddef>
#include <string>

namespace gpt2lab::serve {

struct ConnectionLimits {
  int io_timeout_s = 10;       // each read and write (--timeout)
  int request_timeout_s = 30;  // a whole request arrives within this (--request-timeout)
  int keep_alive_s = 5;        // an idle connection waits this long for its next request
  size_t max_header_bytes = size_t{64} << 10;
  bool quiet = false;  // no log line for a request that timed out before httplib saw it
};

class HttpServer final : public httplib::Server {
 public:
  explicit HttpServer(const ConnectionLimits& limits) : limits_(limits) {}

 private:
  bool process_and_close_socket(socket_t sock) override;
  ConnectionLimits limits_;
};

// About the request this thread is reading or answering (no effect, and
// false, off a connection thread):
// The connection closes once `res` is sent (a body may be left unread).
void close_after_reply(httplib::Response& res);
// A read failed because the request was not in within --request-timeout.
bool request_timed_out();
// The request line and headers ran past ConnectionLimits::max_header_bytes.
bool request_headers_too_long();
// The request line and headers are read: the header cap stops counting.
void headers_done();
// What to tell the client when request_timed_out() (408) or
// request_headers_too_long() (431).
std::string request_refusal_message(int status);

}  // namespace gpt2lab::serve
