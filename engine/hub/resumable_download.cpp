// Resumable downloads into "<target>.part" (see resumable_download.h).
#include "engine/hub/resumable_download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>

#include "engine/core/safe_write.h"

namespace strata {
namespace fs = std::filesystem;
namespace {

std::string errno_text() { return std::strerror(errno); }

// The part file, open and locked for this process.
class PartFile {
  public:
    explicit PartFile(const std::string& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd_ < 0) throw SystemError(cat("cannot open the partial download ", path, ": ", errno_text()));
        struct stat st {};
        if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd_);
            throw SystemError(cat("partial download ", path, " is not a regular file"));
        }
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            ::close(fd_);
            throw SystemError(cat("another process is downloading into ", path, " (it holds its lock)"));
        }
        size_ = static_cast<uint64_t>(st.st_size);
    }
    ~PartFile() { ::close(fd_); }
    PartFile(const PartFile&) = delete;
    PartFile& operator=(const PartFile&) = delete;

    uint64_t size() const { return size_; }
    void truncate() {
        if (::ftruncate(fd_, 0) != 0) throw SystemError(cat("cannot truncate ", path_, ": ", errno_text()));
        size_ = 0;
    }
    void append(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(size_));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw SystemError(cat("cannot write ", path_, ": ", errno_text()));
            size_ += static_cast<uint64_t>(n);
            bytes.remove_prefix(static_cast<size_t>(n));
        }
    }
    void sync() {
        if (::fsync(fd_) != 0) throw SystemError(cat("cannot flush ", path_, ": ", errno_text()));
    }

  private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// "bytes START-END/TOTAL" or "bytes */TOTAL": {start (-1 for '*'), total (-1 for '*')}.
std::pair<int64_t, int64_t> parse_content_range(const std::string& v) {
    int64_t start = -1, total = -1;
    const size_t sp = v.find(' '), dash = v.find('-'), slash = v.find('/');
    try {
        if (slash == std::string::npos || sp == std::string::npos) throw std::invalid_argument("");
        if (v[sp + 1] != '*') start = std::stoll(v.substr(sp + 1, dash - sp - 1));
        if (v[slash + 1] != '*') total = std::stoll(v.substr(slash + 1));
    } catch (const std::exception&) {
        throw FormatError(cat("the server's Content-Range '", v.substr(0, 80), "' is not bytes S-E/T"));
    }
    return {start, total};
}

void sync_folder(const fs::path& folder) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// Runs the GET into `part`; returns the total the server announced (-1: unknown).
int64_t transfer(const DownloadRequest& req, PartFile& part, uint64_t& resumed_from) {
    HttpRequest http = req.http;
    if (part.size() > 0) http.range = cat("bytes=", part.size(), "-");
    int64_t total = -1;
    std::exception_ptr failed;  // thrown inside a callback: kept, rethrown outside httplib
    auto on_head = [&](const HttpHead& head) {
        try {
            if (head.status == 206) {
                const auto [start, t] = parse_content_range(head.content_range);
                if (start != static_cast<int64_t>(part.size())) {
                    throw FormatError(cat("asked to resume at byte ", part.size(), ", the server sent from ", start));
                }
                total = t;
                return true;
            }
            if (head.status == 416) {  // nothing after our bytes: complete if the sizes agree
                total = parse_content_range(head.content_range).second;
                if (total != static_cast<int64_t>(part.size())) part.truncate();
                return false;
            }
            resumed_from = 0;  // 200: the whole file again
            part.truncate();
            total = head.content_length;
            return true;
        } catch (...) {
            failed = std::current_exception();
            return false;
        }
    };
    auto on_body = [&](std::string_view chunk) {
        try {
            part.append(chunk);
        } catch (...) {
            failed = std::current_exception();
            return false;
        }
        if (req.on_progress) req.on_progress(part.size(), total >= 0 ? total : req.expected_size);
        return true;
    };
    try {
        http_get(http, on_head, on_body);
    } catch (const HttpStatusError&) {
        throw;
    } catch (const SystemError& e) {
        part.sync();
        throw SystemError(cat(e.what(), "; ", part.size(), " bytes kept in ", part_path_for(req.target),
                              ": run the same command again to resume"));
    }
    if (failed) std::rethrow_exception(failed);
    return total;
}

}  // namespace

std::string part_path_for(const std::string& target) { return target + ".part"; }

DownloadResult download_resumable(const DownloadRequest& req) {
    DownloadResult result;
    std::error_code ec;
    fs::create_directories(fs::path(req.target).parent_path(), ec);
    if (ec) throw SystemError(cat("cannot create the folder of ", req.target, ": ", ec.message()));
    if (fs::is_regular_file(req.target, ec)) {
        const uint64_t size = fs::file_size(req.target, ec);
        if (req.expected_size < 0 || size == static_cast<uint64_t>(req.expected_size)) {
            result.bytes = size;
            result.already_there = true;
            return result;
        }
    }
    check_write_target(req.target, "downloaded model");
    const std::string part_path = part_path_for(req.target);
    PartFile part(part_path);
    if (req.expected_size >= 0 && part.size() > static_cast<uint64_t>(req.expected_size)) part.truncate();
    result.resumed_from = part.size();
    int64_t total = req.expected_size;
    if (req.expected_size < 0 || part.size() < static_cast<uint64_t>(req.expected_size)) {
        total = transfer(req, part, result.resumed_from);
    }
    part.sync();
    if (total >= 0 && part.size() != static_cast<uint64_t>(total)) {
        throw SystemError(cat("download of ", req.http.url, " stopped at ", part.size(), " of ", total,
                              " bytes (kept in ", part_path, "): run the same command again to resume"));
    }
    if (req.expected_size >= 0 && part.size() != static_cast<uint64_t>(req.expected_size)) {
        part.truncate();
        throw FormatError(cat(req.http.url, " has ", total, " bytes, the hub's file list says ",
                              req.expected_size, "; the partial file was cleared"));
    }
    if (::rename(part_path.c_str(), req.target.c_str()) != 0) {
        throw SystemError(cat("cannot rename ", part_path, " to ", req.target, ": ", errno_text()));
    }
    sync_folder(fs::path(req.target).parent_path());
    result.bytes = part.size();
    return result;
}

}  // namespace strata
