// Finding a request's socket by its address pair and polling it (connection_probe.h).
#include "engine/server/connection_probe.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace strata::server {
namespace {

// The address as cpp-httplib spells it (getnameinfo, numeric host and port).
bool address_of(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
    char h[NI_MAXHOST], s[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, s, sizeof s,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return false;
    }
    host = h;
    port = std::atoi(s);
    return true;
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    std::string host;
    int port = -1;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !address_of(addr, len, host, port) ||
        port != remote_port || host != remote_addr) {
        return false;
    }
    len = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !address_of(addr, len, host, port)) {
        return false;
    }
    return port == local_port && (local_addr.empty() || host == local_addr);
}

}  // namespace

ConnectionProbe::ConnectionProbe(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                 int remote_port) {
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return;
    const int own = dirfd(dir);
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd == own) continue;
        if (matches(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
            fd_ = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
}

bool ConnectionProbe::peer_closed() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
    // Readable: a next pipelined request (data) or the end of the stream (0 bytes).
    char byte;
    return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace strata::server
