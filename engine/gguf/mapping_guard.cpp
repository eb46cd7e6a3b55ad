// SIGBUS on a mapped model file (mapping_guard.h).
#include "engine/gguf/mapping_guard.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace strata {
namespace {

constexpr int kSlots = 16;
constexpr size_t kMessageBytes = 4096 + 256;

struct Guard {
    std::atomic<bool> used{false};
    uintptr_t begin = 0, end = 0;
    char path[4096];
};

Guard g_guards[kSlots];
std::mutex g_mutex;
std::once_flag g_once;

void write_all(const char* text, size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(2, text, n);
        if (w <= 0) return;
        text += w;
        n -= static_cast<size_t>(w);
    }
}

// Appends `v` in decimal; async-signal-safe.
size_t put_number(char* out, uint64_t v) {
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v > 0);
    for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    return n;
}

size_t put_text(char* out, const char* text) {
    const size_t n = std::strlen(text);
    std::memcpy(out, text, n);
    return n;
}

extern "C" void on_sigbus(int sig, siginfo_t* info, void*) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (const Guard& g : g_guards) {
        if (!g.used.load(std::memory_order_acquire) || addr < g.begin || addr >= g.end) continue;
        char msg[kMessageBytes];
        size_t n = put_text(msg, "strata: error: the model file '");
        n += put_text(msg + n, g.path);
        n += put_text(msg + n, "' became shorter while it was being read (byte ");
        n += put_number(msg + n, addr - g.begin);
        n += put_text(msg + n, " of ");
        n += put_number(msg + n, g.end - g.begin);
        n += put_text(msg + n, " is gone): was it overwritten or truncated? Restore it and run again\n");
        write_all(msg, n);
        ::_exit(1);
    }
    ::signal(sig, SIG_DFL);  // not ours: the fault repeats with the default action
}

void install() {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;
    ::sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace

int guard_mapping(const void* base, size_t size, const std::string& path) {
    std::call_once(g_once, install);
    const std::lock_guard<std::mutex> lock(g_mutex);
    for (int i = 0; i < kSlots; ++i) {
        Guard& g = g_guards[i];
        if (g.used.load(std::memory_order_acquire)) continue;
        g.begin = reinterpret_cast<uintptr_t>(base);
        g.end = g.begin + size;
        std::snprintf(g.path, sizeof g.path, "%s", path.c_str());
        g.used.store(true, std::memory_order_release);
        return i;
    }
    return -1;
}

void unguard_mapping(int slot) {
    if (slot >= 0 && slot < kSlots) g_guards[slot].used.store(false, std::memory_order_release);
}

}  // namespace strata
