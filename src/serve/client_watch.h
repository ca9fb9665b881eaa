// Notices a client that closed its connection while its completion waits or
// runs, so that generation stops for nobody (cpp-httplib 0.11 hands handlers
// neither the socket nor a "connection closed" test). The socket is found
// once by the request's two addresses among this process's descriptors; it
// stays this connection's while the handler runs, since httplib closes it
// only after the handler returns.
#pragma once

#include <string>

namespace gpt2lab::serve {

// The numeric address and port of socket `fd`'s peer (or its own), as the
// addresses ClientWatch is given are written.
void socket_ip_and_port(int fd, bool peer, std::string& ip, int& port);

class ClientWatch {
 public:
  ClientWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
  // True once the peer has closed or shut down its side (a half-closed
  // connection counts: an HTTP client does not half-close and then wait).
  bool gone() const;

 private:
  int fd_ = -1;  // -1: not found; then never gone
};

}  // namespace gpt2lab::serve
