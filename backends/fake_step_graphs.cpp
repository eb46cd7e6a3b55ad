// The fake device's step graphs (fake_device.h, FakeDeviceOptions::step_graphs): a recording
// runs its ops at once, as CUDA's launch at end_graph would, and keeps each as a closure over
// the same tensors. Replays run them again with the slot set to the new token and position, and
// check again that every tensor lies in the pool: a recording that names a freed buffer fails
// here, as a stale CUDA graph would read freed memory there.
#include <cstring>

#include "backends/fake_device.h"
#include "engine/core/error.h"

namespace strata {

void FakeDeviceBackend::begin_step_graph(StepGraphId id, const int32_t* token, const int32_t* position) {
    if (!capabilities_.step_graphs) throw UnsupportedError("the fake device was made without step graphs");
    if (id.owner == nullptr || token == nullptr || position == nullptr) {
        throw ArgumentError("begin_step_graph: needs an owner and the step's token and position arrays");
    }
    if (recording_ != nullptr) throw ArgumentError("begin_step_graph: a graph is already being recorded");
    Recording& rec = recordings_[{id.owner, id.part}];
    rec = Recording{};
    recording_ = &rec;
    token_host_ = token;
    position_host_ = position;
    slot_[0] = *token;
    slot_[1] = *position;
}

void FakeDeviceBackend::end_graph() {
    if (recording_ == nullptr) return;  // a plain graph: its ops ran as they came
    recording_->ready = true;
    recording_ = nullptr;
    std::lock_guard lock(mutex_);
    ++stats_.graph_launches;
}

void FakeDeviceBackend::abort_graph() {
    if (recording_ == nullptr) return;
    *recording_ = Recording{};
    recording_ = nullptr;
}

bool FakeDeviceBackend::replay_step(StepGraphId id, int32_t token, int32_t position) {
    if (!capabilities_.step_graphs) throw UnsupportedError("the fake device was made without step graphs");
    if (recording_ != nullptr) return false;
    const auto it = recordings_.find({id.owner, id.part});
    if (it == recordings_.end() || !it->second.ready) return false;
    slot_[0] = token;
    slot_[1] = position;
    for (const auto& op : it->second.ops) op();
    std::lock_guard lock(mutex_);
    ++stats_.graph_launches;
    return true;
}

void FakeDeviceBackend::run(std::function<void()> op) {
    op();
    if (recording_ != nullptr) recording_->ops.push_back(std::move(op));
}

const int32_t* FakeDeviceBackend::ids_arg(const int32_t* ids, int64_t n) {
    if (recording_ == nullptr || ids == nullptr) return ids;
    if (n == 1 && ids == token_host_) return &slot_[0];
    if (n == 1 && ids == position_host_) return &slot_[1];
    auto copy = std::make_shared<std::vector<int32_t>>(ids, ids + n);
    recording_->arrays.push_back(copy);
    return copy->data();
}

bool FakeDeviceBackend::at_step_position(int64_t first_cell, int64_t n) const {
    return recording_ != nullptr && n == 1 && first_cell == slot_[1];
}

void FakeDeviceBackend::refuse_while_recording(std::string_view what) const {
    if (recording_ != nullptr) {
        throw ArgumentError(cat("fake device: ", what, " while a step graph records (a graph cannot hold it)"));
    }
}

void FakeDeviceBackend::not_recorded(std::string_view op) const {
    if (recording_ != nullptr) throw UnsupportedError(cat("fake device: ", op, " is not recorded in step graphs"));
}

}  // namespace strata
