// Temporary-file registry with signal-time cleanup (temp_files.h).
#include "engine/core/temp_files.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace strata {
namespace {

constexpr size_t kMaxPath = 4096;
constexpr const char* kTempTag = ".strata-tmp.";

struct Slot {
    std::atomic<bool> used{false};
    char path[kMaxPath];
};

Slot g_slots[kMaxTempFiles];
std::once_flag g_handlers_once;
std::mutex g_register_mutex;

extern "C" void remove_temps_and_reraise(int sig) {
    for (Slot& s : g_slots) {
        if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

void install_handlers() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0) continue;
        if (old.sa_handler != SIG_DFL) continue;  // the program handles it (or ignores it)
        struct sigaction sa {};
        sa.sa_handler = remove_temps_and_reraise;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;
        ::sigaction(sig, &sa, nullptr);
    }
}

}  // namespace

int register_temp_file(const std::string& path) {
    std::call_once(g_handlers_once, install_handlers);
    if (path.size() >= kMaxPath) return -1;
    const std::lock_guard<std::mutex> lock(g_register_mutex);
    for (int i = 0; i < kMaxTempFiles; ++i) {
        if (g_slots[i].used.load(std::memory_order_acquire)) continue;
        std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
        g_slots[i].used.store(true, std::memory_order_release);  // the handler reads the path after this
        return i;
    }
    return -1;
}

void unregister_temp_file(int slot) {
    if (slot >= 0 && slot < kMaxTempFiles) g_slots[slot].used.store(false, std::memory_order_release);
}

std::string temp_path_for(const std::string& target) {
    const std::filesystem::path p(target);
    std::filesystem::path dir = p.parent_path();
    const std::string name = "." + p.filename().string() + kTempTag + std::to_string(::getpid());
    return dir.empty() ? name : (dir / name).string();
}

void remove_stale_temp_files(const std::string& target) {
    const std::filesystem::path p(target);
    const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    const std::string prefix = "." + p.filename().string() + kTempTag;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string pid_text = name.substr(prefix.size());
        if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
        const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
        const bool alive = pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
        if (!alive) ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
}

}  // namespace strata
