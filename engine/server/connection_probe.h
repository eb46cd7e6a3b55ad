// ConnectionProbe: tells a handler that waits for a whole (non-streamed) answer whether its
// client has gone. cpp-httplib 0.11 (Debian 12) gives handlers no socket, so the probe finds it
// among this process's open sockets by the request's address pair — unique while the
// connection is open, which it is as long as the handler runs. Streams need no probe: their
// writes fail. Linux only (/proc/self/fd).
#pragma once

#include <string>

namespace strata::server {

class ConnectionProbe {
public:
    ConnectionProbe(const std::string& local_addr, int local_port, const std::string& remote_addr,
                    int remote_port);

    bool found() const { return fd_ >= 0; }
    // True once the peer has closed or reset the connection (false when not found).
    bool peer_closed() const;

private:
    int fd_ = -1;
};

}  // namespace strata::server
