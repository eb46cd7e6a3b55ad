// The handler/engine hand-over of one request (job.h).
#include "engine/server/job.h"

namespace strata::server {

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Length: return "length";
        case FinishReason::ToolCalls: return "tool_calls";
        default: return "stop";
    }
}

Job::Job(JobSpec spec) : spec_(std::move(spec)), queued_at_(std::chrono::steady_clock::now()) {}

Job::Update Job::take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return finished_ || !pending_.empty() || !pending_logprobs_.empty(); });
    Update u;
    u.text.swap(pending_);
    u.logprobs.swap(pending_logprobs_);
    u.finished = finished_;
    if (finished_) u.result = result_;
    return u;
}

void Job::append(std::string_view text) {
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        pending_ += text;
    }
    changed_.notify_all();
}

void Job::add_logprob(TokenLogprob logprob) {
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        pending_logprobs_.push_back(std::move(logprob));
    }
    changed_.notify_all();
}

void Job::finish(JobResult result) {
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        finished_ = true;
        result_ = std::move(result);
    }
    changed_.notify_all();
}

bool Job::finished() const {
    std::lock_guard lock(mutex_);
    return finished_;
}

}  // namespace strata::server
