// CudaBackend's CUDA graphs: a recorded stretch of ops launched as one unit (begin_graph /
// end_graph), and the replayable decode step (begin_step_graph / replay_step). A step recording
// reads the step's token and position from a device slot that a one-thread kernel sets before
// each launch, and its other small arguments (RoPE frequencies) from device memory that lives
// with the recording, so a decode step costs one launch instead of recording a few hundred ops,
// updating the executable graph and copying the arguments again every token.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/core/error.h"
#include "kernels_cuda/backend_impl.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

constexpr size_t kStepArgBytes = 256 * 1024;  // constant arguments of one step recording
constexpr size_t kArgAlign = 256;

using Micros = std::chrono::duration<double, std::micro>;

// Updates `exec` in place from `graph` when only parameters changed, else instantiates anew.
// Returns whether it was updated.
bool instantiate_or_update(cudaGraphExec_t& exec, cudaGraph_t graph) {
    if (exec != nullptr) {
        cudaGraphExecUpdateResultInfo info{};
        if (cudaGraphExecUpdate(exec, graph, &info) == cudaSuccess) return true;
        cudaGetLastError();  // clear the failed update
        cudaGraphExecDestroy(exec);
        exec = nullptr;
    }
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    return false;
}

}  // namespace

const void* CudaBackend::Impl::stage_bytes(const void* host, size_t bytes) {
    if (!step.recording) return args->push(host, bytes, stream);
    auto* slot = static_cast<const int32_t*>(step.slot.data());
    if (host == step.token_host && bytes == sizeof(int32_t)) return slot;
    if (host == step.position_host && bytes == sizeof(int32_t)) return slot + 1;
    // Any other argument is a constant of the step: it goes with the recording, after the
    // constants of the owner's other recordings.
    const ArenaBuffer& dev = current_owner().args_dev;
    const size_t at = current_step().args_at + step.args_host.size();
    const size_t size = (bytes + kArgAlign - 1) / kArgAlign * kArgAlign;
    if (at + size > dev.size()) {
        throw UnsupportedError(cat("step graph: op arguments beyond ", dev.size(), " bytes in one decode step"));
    }
    const size_t local = step.args_host.size();
    step.args_host.resize(local + size);
    std::memcpy(step.args_host.data() + local, host, bytes);
    return static_cast<const uint8_t*>(dev.data()) + at;
}

void CudaBackend::Impl::set_slot(int32_t token, int32_t position) {
    if (step.slot_known && step.slot_token == token && step.slot_position == position) return;
    set_step_slot(static_cast<int32_t*>(step.slot.data()), token, position, stream);
    step.slot_known = true;
    step.slot_token = token;
    step.slot_position = position;
}

const int32_t* CudaBackend::Impl::step_cell(int64_t first_cell, int64_t n) const {
    if (!step.recording || n != 1 || first_cell != step.position) return nullptr;
    return static_cast<const int32_t*>(step.slot.data()) + 1;
}

void CudaBackend::begin_graph() {
    Impl& s = *impl_;
    s.forget_quantized_x();  // the graph must not lean on a quantization made before it
    if (s.capturing) throw ArgumentError("begin_graph: a graph is already being recorded");
    s.args->reserve(64 * 1024, s.stream);  // a decode step's arguments, without a wait inside
    if (s.timer != nullptr) s.capture_started = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
    s.capturing = true;
}

void CudaBackend::begin_step_graph(StepGraphId id, const int32_t* token, const int32_t* position) {
    Impl& s = *impl_;
    if (id.owner == nullptr || token == nullptr || position == nullptr) {
        throw ArgumentError("begin_step_graph: needs an owner and the step's token and position arrays");
    }
    if (!s.step.slot) s.step.slot = ArenaBuffer(s.arena, 2 * sizeof(int32_t), "step graph slot");
    if (s.step.by_owner.count(id.owner) == 0 && s.step.by_owner.size() >= Impl::kStepOwners) {
        // The least recently used owner's recordings go; their last launches may still be running.
        auto oldest = s.step.by_owner.begin();
        for (auto it = s.step.by_owner.begin(); it != s.step.by_owner.end(); ++it)
            if (it->second.used < oldest->second.used) oldest = it;
        CUDA_CHECK(cudaStreamSynchronize(s.stream));
        for (auto& [part, rec] : oldest->second.parts)
            if (rec.exec != nullptr) cudaGraphExecDestroy(rec.exec);
        s.step.by_owner.erase(oldest);
    }
    Impl::StepOwner& o = s.step.by_owner[id.owner];
    if (!o.args_dev) o.args_dev = ArenaBuffer(s.arena, kStepArgBytes, "step graph arguments");
    // A recording's constants go after the owner's others. Past half the buffer they start over
    // and the owner's other recordings are dropped: launches queued before read theirs before
    // the copy that overwrites them, which is queued after.
    if (o.args_end > o.args_dev.size() / 2) {
        for (auto& [part, rec] : o.parts) rec.ready = false;
        o.args_end = 0;
    }
    Impl::StepRecording& rec = o.parts[id.part];
    rec.ready = false;  // whatever this part recorded before is replaced
    rec.args_at = o.args_end;
    begin_graph();
    s.step.recording = true;
    s.step.owner = id.owner;
    s.step.part = id.part;
    s.step.token_host = token;
    s.step.position_host = position;
    s.step.token = *token;
    s.step.position = *position;
    s.step.args_host.clear();
}

void CudaBackend::end_graph() {
    Impl& s = *impl_;
    s.forget_quantized_x();  // nothing recorded runs if instantiation fails
    if (!s.capturing) throw ArgumentError("end_graph: no graph is being recorded");
    s.capturing = false;
    s.args->forget_recent();  // what the graph pushed is copied only when it runs
    const bool step = s.step.recording;
    s.step.recording = false;
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(s.stream, &graph));
    const auto captured = std::chrono::steady_clock::now();
    cudaGraphExec_t& exec = step ? s.current_step().exec : s.graph_exec;
    bool updated = false;
    try {
        updated = instantiate_or_update(exec, graph);
    } catch (...) {
        cudaGraphDestroy(graph);
        throw;
    }
    if (!updated) ++s.graph_instantiations;
    cudaGraphDestroy(graph);
    if (step) {
        // The constants first (rarely: once per recording), then this step's slot values.
        Impl::StepOwner& o = s.current_owner();
        const size_t at = s.current_step().args_at;
        if (!s.step.args_host.empty()) {
            CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(o.args_dev.data()) + at, s.step.args_host.data(),
                                       s.step.args_host.size(), cudaMemcpyHostToDevice, s.stream));
        }
        o.args_end = std::max(o.args_end, at + s.step.args_host.size());
        s.set_slot(s.step.token, s.step.position);
    }
    const auto ready = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaGraphLaunch(exec, s.stream));
    s.retired.clear();  // later users of these bytes are ordered after the launch
    ++s.graph_launches;
    if (step) {
        Impl::StepRecording& rec = s.current_step();
        rec.ready = true;
        rec.epoch = s.scratch_epoch;
        s.current_owner().used = ++s.step.clock;
    }
    if (s.timer != nullptr) {
        const auto launched = std::chrono::steady_clock::now();
        s.timer->add_host("graph recording (ops issued into capture)", Micros(captured - s.capture_started).count());
        s.timer->add_host(updated ? "graph exec update" : "graph instantiate", Micros(ready - captured).count());
        s.timer->add_host("graph launch call", Micros(launched - ready).count());
        CUDA_CHECK(cudaStreamSynchronize(s.stream));
        s.timer->add_host("graph GPU run (launch to done, host clock)",
                          Micros(std::chrono::steady_clock::now() - launched).count());
        s.timer->count_step();
        s.timer->collect();
    }
}

bool CudaBackend::replay_step(StepGraphId id, int32_t token, int32_t position) {
    Impl& s = *impl_;
    // The op timer reads each step's events once: it records every step instead.
    if (s.capturing || s.timer != nullptr) return false;
    const auto o = s.step.by_owner.find(id.owner);
    if (o == s.step.by_owner.end()) return false;
    const auto it = o->second.parts.find(id.part);
    if (it == o->second.parts.end() || !it->second.ready || it->second.epoch != s.scratch_epoch) return false;
    s.forget_quantized_x();  // the graph writes activations
    s.set_slot(token, position);
    CUDA_CHECK(cudaGraphLaunch(it->second.exec, s.stream));
    o->second.used = ++s.step.clock;
    ++s.graph_launches;
    return true;
}

void CudaBackend::abort_graph() {
    Impl& s = *impl_;
    s.forget_quantized_x();  // the recorded quantizations never run
    if (s.step.recording) s.current_step().ready = false;
    s.step.recording = false;
    if (!s.capturing) return;
    s.capturing = false;
    s.args->forget_recent();  // the recorded copies never run
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(s.stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    s.retired.clear();
}

uint64_t CudaBackend::graph_launches() const { return impl_->graph_launches; }
uint64_t CudaBackend::graph_instantiations() const { return impl_->graph_instantiations; }

}  // namespace strata::cuda
