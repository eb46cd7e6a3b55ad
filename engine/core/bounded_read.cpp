// Bounded reads (bounded_read.h).
#include "engine/core/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/safe_write.h"

namespace strata {
namespace {

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a fifo (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string mib(uint64_t bytes) { return cat(bytes >> 20, " MiB"); }

// The deepest nesting of arrays and objects in `text`, strings skipped; stops counting at `cap`+1.
int json_depth(std::string_view text, int cap) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > cap) return deepest;
        } else if (c == ']' || c == '}') --depth;
    }
    return deepest;
}

}  // namespace

void check_regular_file(const std::string& path, std::string_view what) {
    if (path.empty()) throw ArgumentError(cat(what, ": the file name is empty"));
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        throw SystemError(cat("cannot read ", what, " '", path, "': ", std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode)) {
        throw SystemError(cat("cannot read ", what, " '", path, "': it is ", kind_of(st.st_mode),
                              ", expected a regular file"));
    }
}

std::string read_bounded_file(const std::string& path, std::string_view what,
                              const ReadOptions& options) {
    check_regular_file(path, what);
    // O_NONBLOCK: if the path was swapped for a fifo since the check, open does not block.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw SystemError(cat("cannot read ", what, " '", path, "': ", std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw SystemError(cat("cannot read ", what, " '", path, "': expected a regular file"));
    }
    if (static_cast<uint64_t>(st.st_size) > options.max_bytes) {
        ::close(fd);
        throw ArgumentError(cat(what, " '", path, "' is ", mib(st.st_size), ", more than the ",
                                mib(options.max_bytes), " such a file may have"));
    }
    std::string data;
    data.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (true) {  // the file may grow while it is read: never past the cap
        if (done == data.size()) {
            if (data.size() >= options.max_bytes) break;
            data.resize(std::min<uint64_t>(options.max_bytes, data.size() + (1 << 16)));
        }
        const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const std::string reason = std::strerror(errno);
            ::close(fd);
            throw SystemError(cat("cannot read ", what, " '", path, "': ", reason));
        }
        if (n == 0) break;
        done += static_cast<size_t>(n);
    }
    ::close(fd);
    data.resize(done);
    if (options.note_input) note_input_file(path);
    return data;
}

void check_json_depth(std::string_view text, std::string_view what) {
    if (json_depth(text, kMaxJsonDepth) > kMaxJsonDepth) {
        throw FormatError(cat(what, " nests arrays or objects deeper than ", kMaxJsonDepth,
                              " levels: not a Strata file"));
    }
}

nlohmann::json parse_json_bounded(std::string_view text, std::string_view what) {
    check_json_depth(text, what);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw FormatError(cat(what, " is not valid JSON"));
    return j;
}

nlohmann::json read_json_file(const std::string& path, std::string_view what,
                              const ReadOptions& options) {
    const std::string text = read_bounded_file(path, what, options);
    return parse_json_bounded(text, cat(what, " '", path, "'"));
}

}  // namespace strata
