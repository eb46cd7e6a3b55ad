// cuda-api-time: an LD_PRELOAD library that counts the host's wall time inside the CUDA runtime
// (launches, graph launches and updates, copies, synchronizations). It needs nothing from the
// program it times, so one build measures any Strata binary, old or new, the same way: the
// "GPU share" of a hybrid token is the time its host thread spends handing work to the GPU and
// waiting for it (scripts/gpu-share.sh takes the difference of two runs to get a per-token figure).
//
// Build: cc -O2 -shared -fPIC scripts/cuda-api-time.c -o cuda-api-time.so -ldl
// Use:   CUDA_API_TIME_OUT=file LD_PRELOAD=./cuda-api-time.so program ...
// At exit it writes one line per wrapped function (name, calls, seconds, then the calls that took
// longer than $CUDA_API_TIME_LONG_MS milliseconds, default 10, and their seconds) and a "total"
// line to $CUDA_API_TIME_OUT (stderr when unset). Long calls are counted apart: a wait for a
// weight upload at load time lasts a varying fraction of a second and would swamp the
// microseconds a decode token spends, while no call of a hybrid token lasts that long.
//
// Every wrapped function returns cudaError_t and takes at most eight integer or pointer
// arguments (dim3 travels as two integer registers on x86-64), so one forwarding shape with eight
// pointer-sized arguments calls the real function with the caller's registers and stack slots.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*Forward)(void*, void*, void*, void*, void*, void*, void*, void*);

struct Counter {
    const char* name;
    Forward real;
    atomic_uint_fast64_t ns;
    atomic_uint_fast64_t calls;
    atomic_uint_fast64_t long_ns;
    atomic_uint_fast64_t long_calls;
};

static uint64_t long_ns_limit(void) {
    static uint64_t limit = 0;
    if (limit == 0) {
        const char* v = getenv("CUDA_API_TIME_LONG_MS");
        const double ms = v != 0 ? atof(v) : 10.0;
        limit = (uint64_t)((ms > 0 ? ms : 10.0) * 1e6);
    }
    return limit;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#define CUDA_API_LIST(X)                                                                            \
    X(cudaStreamSynchronize) X(cudaDeviceSynchronize) X(cudaEventSynchronize) X(cudaEventQuery)     \
    X(cudaStreamQuery) X(cudaStreamWaitEvent) X(cudaEventRecord) X(cudaEventRecordWithFlags)        \
    X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaMemcpy2DAsync) X(cudaMemsetAsync) X(cudaMemset)          \
    X(cudaLaunchKernel) X(__cudaLaunchKernel) X(cudaLaunchKernelExC) X(cudaGraphLaunch) X(cudaGraphExecUpdate)            \
    X(cudaGraphInstantiate) X(cudaGraphInstantiateWithFlags) X(cudaStreamBeginCapture)              \
    X(cudaStreamEndCapture) X(cudaGraphDestroy) X(cudaGraphExecDestroy) X(cudaFuncSetAttribute)

#define DEFINE_COUNTER(fn) static struct Counter counter_##fn = {#fn, 0, 0, 0, 0, 0};
CUDA_API_LIST(DEFINE_COUNTER)

#define DEFINE_WRAPPER(fn)                                                                          \
    int fn(void* a, void* b, void* c, void* d, void* e, void* f, void* g, void* h) {                \
        if (counter_##fn.real == 0) counter_##fn.real = (Forward)dlsym(RTLD_NEXT, #fn);             \
        if (counter_##fn.real == 0) return 1; /* cudaErrorInvalidValue: no such function */       \
        const uint64_t t0 = now_ns();                                                              \
        const int r = counter_##fn.real(a, b, c, d, e, f, g, h);                                   \
        const uint64_t dt = now_ns() - t0;                                                         \
        const int slow = dt > long_ns_limit();                                                     \
        atomic_fetch_add(slow ? &counter_##fn.long_ns : &counter_##fn.ns, dt);                     \
        atomic_fetch_add(slow ? &counter_##fn.long_calls : &counter_##fn.calls, 1);                \
        return r;                                                                                  \
    }
CUDA_API_LIST(DEFINE_WRAPPER)

static void report_one(FILE* out, struct Counter* c, uint64_t* total) {
    const uint64_t ns = atomic_load(&c->ns), calls = atomic_load(&c->calls);
    const uint64_t long_ns = atomic_load(&c->long_ns), long_calls = atomic_load(&c->long_calls);
    if (calls + long_calls == 0) return;
    fprintf(out, "%-32s %12llu %14.6f %8llu %12.6f\n", c->name, (unsigned long long)calls, (double)ns * 1e-9,
            (unsigned long long)long_calls, (double)long_ns * 1e-9);
    total[0] += calls;
    total[1] += ns;
    total[2] += long_calls;
    total[3] += long_ns;
}

__attribute__((destructor)) static void report(void) {
    const char* path = getenv("CUDA_API_TIME_OUT");
    FILE* out = path != 0 ? fopen(path, "w") : stderr;
    if (out == 0) out = stderr;
    uint64_t total[4] = {0, 0, 0, 0};
#define REPORT(fn) report_one(out, &counter_##fn, total);
    CUDA_API_LIST(REPORT)
    fprintf(out, "%-32s %12llu %14.6f %8llu %12.6f\n", "total", (unsigned long long)total[0], (double)total[1] * 1e-9,
            (unsigned long long)total[2], (double)total[3] * 1e-9);
    if (out != stderr) fclose(out);
}
