// Safe writes (safe_write.h): temporary file, fsync, rename; inputs and open files protected.
#include "engine/core/safe_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/temp_files.h"

namespace strata {
namespace {

using FileId = std::pair<dev_t, ino_t>;

// An input is its inode and its modification time: an inode number that a deleted input freed
// and a new file reuses is not that input.
using InputId = std::tuple<dev_t, ino_t, int64_t>;

InputId input_id(const struct stat& st) {
    return {st.st_dev, st.st_ino, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

std::mutex g_inputs_mutex;
std::set<InputId>& inputs() {
    static std::set<InputId> files;
    return files;
}

std::string errno_text() { return std::strerror(errno); }

// Files this process has open (/proc/self/fd) or mapped (/proc/self/maps).
bool open_or_mapped(const FileId& id) {
    if (DIR* d = ::opendir("/proc/self/fd")) {
        bool found = false;
        while (const dirent* e = ::readdir(d)) {
            if (e->d_name[0] == '.') continue;
            struct stat st {};
            const std::string fd_path = std::string("/proc/self/fd/") + e->d_name;
            if (::stat(fd_path.c_str(), &st) == 0 && st.st_dev == id.first && st.st_ino == id.second) {
                found = true;
                break;
            }
        }
        ::closedir(d);
        if (found) return true;
    }
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        // address perms offset dev(major:minor, hex) inode path
        std::istringstream in(line);
        std::string addr, perms, offset, dev;
        unsigned long long inode = 0;
        if (!(in >> addr >> perms >> offset >> dev >> inode) || inode == 0) continue;
        unsigned major_id = 0, minor_id = 0;
        if (std::sscanf(dev.c_str(), "%x:%x", &major_id, &minor_id) != 2) continue;
        if (makedev(major_id, minor_id) == id.first && inode == id.second) return true;
    }
    return false;
}

// The target with symbolic links resolved (a link is written through, not replaced).
std::string resolve_target(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_symlink(path, ec)) {
        const std::filesystem::path real = std::filesystem::weakly_canonical(path, ec);
        if (!ec) return real.string();
    }
    return path;
}

void fsync_folder(const std::string& target) {
    std::filesystem::path dir = std::filesystem::path(target).parent_path();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);  // best effort: some filesystems refuse fsync on a folder
    ::close(fd);
}

}  // namespace

void note_input_file(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return;
    const std::lock_guard<std::mutex> lock(g_inputs_mutex);
    inputs().insert(input_id(st));
}

void check_write_target(const std::string& path, std::string_view what) {
    if (path.empty()) throw ArgumentError(cat(what, ": the file name is empty"));
    const std::string target = resolve_target(path);
    struct stat st {};
    if (::stat(target.c_str(), &st) != 0) {
        if (errno != ENOENT) {
            throw SystemError(cat("cannot write ", what, " '", path, "': ", errno_text()));
        }
        std::filesystem::path dir = std::filesystem::path(target).parent_path();
        if (dir.empty()) dir = ".";
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
            throw SystemError(cat("cannot write ", what, " '", path, "': folder '", dir.string(),
                                  "' does not exist"));
        }
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        throw ArgumentError(cat("cannot write ", what, " '", path, "': it is a folder"));
    }
    if (!S_ISREG(st.st_mode)) {
        throw ArgumentError(cat("cannot write ", what, " '", path,
                                "': it is not a regular file (a device, fifo or socket)"));
    }
    const FileId id{st.st_dev, st.st_ino};
    bool is_input = false;
    {
        const std::lock_guard<std::mutex> lock(g_inputs_mutex);
        is_input = inputs().count(input_id(st)) != 0;
    }
    if (is_input || open_or_mapped(id)) {
        throw ArgumentError(cat("refusing to write ", what, " to '", path,
                                "': it is a file this run reads (the model or another input); "
                                "choose another file name"));
    }
}

AtomicFileWriter::AtomicFileWriter(const std::string& path, std::string_view what)
    : what_(what) {
    check_write_target(path, what);
    path_ = resolve_target(path);
    remove_stale_temp_files(path_);
    tmp_ = temp_path_for(path_);
    slot_ = register_temp_file(tmp_);
    out_.open(tmp_, std::ios::binary | std::ios::trunc);
    if (!out_) {
        const std::string reason = errno_text();
        unregister_temp_file(slot_);
        throw SystemError(cat("cannot write ", what_, " '", path, "': ", reason));
    }
}

AtomicFileWriter::~AtomicFileWriter() {
    if (!committed_) {
        out_.close();
        ::unlink(tmp_.c_str());
    }
    unregister_temp_file(slot_);
}

void AtomicFileWriter::write(std::string_view bytes) {
    out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out_) throw SystemError(cat("writing ", what_, " '", path_, "' failed: ", errno_text()));
}

void AtomicFileWriter::commit() {
    if (committed_) return;
    out_.flush();
    const bool stream_ok = static_cast<bool>(out_);
    const std::string reason = errno_text();
    out_.close();
    if (!stream_ok || out_.fail()) {
        throw SystemError(cat("writing ", what_, " '", path_, "' failed: ", reason, " (the file",
                              " was left as it was)"));
    }
    const int fd = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
        const std::string why = errno_text();
        if (fd >= 0) ::close(fd);
        throw SystemError(cat("writing ", what_, " '", path_, "' failed: fsync: ", why));
    }
    // A replaced file keeps its permissions.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) ::fchmod(fd, st.st_mode & 07777);
    ::close(fd);
    // The target is checked again: an input may have been opened since the writer was made.
    check_write_target(path_, what_);
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        throw SystemError(cat("cannot replace ", what_, " '", path_, "': ", errno_text()));
    }
    committed_ = true;
    fsync_folder(path_);
}

void write_file_atomic(const std::string& path, std::string_view bytes, std::string_view what) {
    AtomicFileWriter w(path, what);
    w.write(bytes);
    w.commit();
}

}  // namespace strata
