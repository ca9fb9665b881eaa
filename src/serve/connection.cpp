#include "serve/connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "serve/client_watch.h"
#include "serve/endpoints.h"

namespace gpt2lab::serve {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int poll_one(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int r;
  do r = poll(&p, 1, ms);
  while (r < 0 && errno == EINTR);
  return r;
}

// One connection as the httplib::Stream its requests are read from and
// answered on: reads are buffered (httplib reads a line a byte at a time)
// and bounded by the request's deadline; writes by --timeout each.
class Connection final : public httplib::Stream {
 public:
  Connection(socket_t fd, const ConnectionLimits& limits) : fd_(fd), limits_(limits) {}

  // Waits for the next request's first byte: false when the connection
  // closed, stayed idle for keep_alive_s, or the server is stopping.
  bool wait_for_request(const std::atomic<socket_t>& listening) {
    const auto end = Clock::now() + std::chrono::seconds(limits_.keep_alive_s);
    while (listening != INVALID_SOCKET) {
      if (off_ < size_) return true;
      const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now()).count();
      if (left <= 0) return false;
      // A short slice, so that a stopping server does not wait out every idle connection.
      const int r = poll_one(fd_, POLLIN, static_cast<int>(std::min<long long>(left, 100)));
      if (r != 0) return r > 0;
    }
    return false;
  }

  void begin_request() {
    deadline_ = Clock::now() + std::chrono::seconds(limits_.request_timeout_s);
    header_bytes_ = written_ = 0;
    headers_done_ = timed_out_ = too_long_ = false;
  }

  bool is_readable() const override { return off_ < size_ || poll_one(fd_, POLLIN, ms_left()) > 0; }
  bool is_writable() const override { return poll_one(fd_, POLLOUT, limits_.io_timeout_s * 1000) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == size_ && !fill()) return -1;
    if (off_ == size_) return 0;  // the client closed its side
    const size_t n = std::min(size, size_ - off_);
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    if (!headers_done_) header_bytes_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n > 0) written_ += static_cast<size_t>(n);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { socket_ip_and_port(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { socket_ip_and_port(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

  // After a request that failed before httplib could answer it (the
  // request line cut by the deadline or too long): the reply httplib would not send.
  void refuse_unanswered() {
    if (written_ > 0 || !(timed_out_ || too_long_)) return;
    const int status = timed_out_ ? 408 : 431;
    const std::string body = dumped(error_json("invalid_request_error", refusal_message(status)));
    const std::string reply = "HTTP/1.1 " + std::to_string(status) +
                              (timed_out_ ? " Request Timeout" : " Request Header Fields Too Large") +
                              "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
    for (size_t at = 0; at < reply.size();) {
      const ssize_t n = write(reply.data() + at, reply.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    if (!limits_.quiet) {
      std::string ip;
      int port = 0;
      get_remote_ip_and_port(ip, port);
      std::fprintf(stderr, "serve: %s (request line not received) -> %d\n", ip.c_str(), status);
    }
  }

  // Ends the connection. After a refusal that left a body unread, the
  // reply is delivered first: the sending side is shut (the client reads
  // the reply and an end), then what the client still sends is dropped
  // until it hangs up or the request's deadline passes.
  void close_connection() {
    if (close_after_reply_ && !timed_out_) {
      shutdown(fd_, SHUT_WR);
      char junk[4096];
      while (poll_one(fd_, POLLIN, ms_left()) > 0 && recv(fd_, junk, sizeof junk, 0) > 0) {
      }
    }
    shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
  }

  std::string refusal_message(int status) const {
    if (status == 431)
      return "the request line and headers are longer than this server's limit of " +
             std::to_string(limits_.max_header_bytes) + " bytes";
    return "the request did not arrive in time: each read may take --timeout " + std::to_string(limits_.io_timeout_s) +
           " s, the whole request (headers and body) --request-timeout " + std::to_string(limits_.request_timeout_s) +
           " s";
  }

  bool close_after_reply_ = false;
  bool headers_done_ = false;
  bool timed_out_ = false;
  bool too_long_ = false;

 private:
  int ms_left() const {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, limits_.io_timeout_s * 1000LL));
  }

  // Reads what the socket has into the buffer; false (and why) when
  // nothing came in time or the headers are over their cap.
  bool fill() {
    if (!headers_done_ && header_bytes_ >= limits_.max_header_bytes) {
      too_long_ = true;
      return false;
    }
    const int r = poll_one(fd_, POLLIN, ms_left());
    if (r == 0) timed_out_ = true;
    if (r <= 0) return false;
    ssize_t n;
    do n = recv(fd_, buf_, sizeof buf_, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) return false;
    off_ = 0;
    size_ = static_cast<size_t>(n);
    return true;
  }

  socket_t fd_;
  const ConnectionLimits& limits_;
  char buf_[4096];
  size_t off_ = 0, size_ = 0;
  Clock::time_point deadline_ = Clock::now();
  size_t header_bytes_ = 0, written_ = 0;
};

thread_local Connection* t_connection = nullptr;

}  // namespace

bool HttpServer::process_and_close_socket(socket_t sock) {
  Connection c(sock, limits_);
  t_connection = &c;
  bool ret = false;
  for (size_t left = keep_alive_max_count_; left > 0 && c.wait_for_request(svr_sock_); --left) {
    c.begin_request();
    bool closed = false;
    // Range is parsed before this runs and applied after the handler: cleared, it is ignored.
    ret = process_request(c, left == 1, closed, [](httplib::Request& req) { req.ranges.clear(); });
    if (!ret) c.refuse_unanswered();
    if (!ret || closed || c.close_after_reply_) break;
  }
  t_connection = nullptr;
  c.close_connection();
  return ret;
}

void close_after_reply(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (t_connection) t_connection->close_after_reply_ = true;
}

bool request_timed_out() { return t_connection && t_connection->timed_out_; }

bool request_headers_too_long() { return t_connection && t_connection->too_long_; }

void headers_done() {
  if (t_connection) t_connection->headers_done_ = true;
}

std::string request_refusal_message(int status) { return t_connection ? t_connection->refusal_message(status) : ""; }

}  // namespace gpt2lab::serve
