// Scheduler: continuous batching over N slots, each its own Session. One engine thread steps
// every busy slot once per iteration — a chunk of a prompt or one decoded token — so requests
// join and leave at every step and a long prompt, prefilled chunk by chunk, does not stall the
// others' decoding. A queued job takes the free slot whose KV shares the longest prefix with
// its prompt (the previous turn of its conversation), else the least recently used one.
// The decode tokens of all slots past their prompts run as one forward pass (BatchStep), so a
// weight is read once per iteration for every stream. On host placements the prompt chunks
// that fit the pass's rows join it too (Dynamic SplitFuse: several prompts, and prompts beside
// decode tokens, read the weights once; a request's results are the same as alone, see
// BatchStep::step_rows); with a device backend, and for chunks that do not fit, prompt chunks
// run per slot. Slots must share one placement to batch (Runtime::new_session); otherwise, or
// with one busy slot, each slot runs its own pass.
// Thread-safety: submit(), shutdown() and gauges() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/batch_step.h"
#include "engine/runtime/session.h"
#include "engine/server/job.h"
#include "engine/server/metrics.h"
#include "engine/server/slot.h"

namespace strata::server {

struct SchedulerOptions {
    int64_t max_queue = 16;      // jobs waiting for a slot; more are refused (429)
    int64_t chunk_tokens = 256;  // prompt tokens per step of one slot
    bool batch_decode = true;    // false: every slot decodes in its own pass (for comparisons)
    // Prompt chunks join the batched pass on host placements (Dynamic SplitFuse); false: each
    // runs in its own pass. STRATA_SERVE_FUSE_PROMPTS=0 sets it false, for A/B runs.
    bool fuse_prompts = true;
    double request_timeout_s = 0;  // a job running longer since it was queued ends with 504; 0: none
    SpecParams spec;             // SpecMode::Lookup: a greedy job alone in the server speculates (slot.h)
};

class Scheduler {
public:
    // One slot per session (at least one; all of one model, all with the same context).
    // `metrics` (optional) must outlive the scheduler. Starts the engine thread.
    Scheduler(std::vector<std::unique_ptr<Session>> sessions, const SchedulerOptions& options,
              Metrics* metrics = nullptr);
    ~Scheduler();  // shutdown("the server is shutting down")
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues a job. ApiError 429 when max_queue jobs already wait, 503 after shutdown().
    // The job's spec must fit the context of a slot (n_ctx()).
    void submit(std::shared_ptr<Job> job);
    // Finishes every queued and running job with 503 and `reason`, and joins the engine
    // thread. Idempotent.
    void shutdown(const std::string& reason);

    SchedulerGauges gauges() const;
    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_slots() const { return static_cast<int64_t>(slots_.size()); }

private:
    void run();              // the engine thread
    void admit_locked();     // queued jobs into free slots (mutex_ held)
    Slot& pick_slot(const JobSpec& spec);
    StepStats step_all();    // one iteration: prompt chunks per slot, decodes batched
    StepStats decode_batch(const std::vector<Slot*>& slots, bool alone);
    // One pass over the decode tokens and prompt chunks of `slots` (two or more; prompt chunks
    // only where the step takes them: BatchStep::step_rows).
    StepStats batched_pass(const std::vector<Slot*>& slots);

    SchedulerOptions options_;
    Metrics* metrics_;
    std::vector<Slot> slots_;  // touched only by the engine thread (and the constructor)
    std::unique_ptr<BatchStep> batch_;  // null when the sessions do not share a placement
    int64_t n_ctx_ = 0;
    uint64_t use_counter_ = 0;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stopping_ = false;
    std::string stop_reason_;
    int64_t n_active_ = 0;       // busy slots, as of the last iteration
    int64_t kv_cells_used_ = 0;  // as of the last iteration
    int64_t batched_passes_ = 0, batched_rows_ = 0, batched_prompt_rows_ = 0;  // SchedulerGauges
    int64_t spec_passes_ = 0, spec_proposed_ = 0, spec_accepted_ = 0;
    double batched_pass_seconds_ = 0, batched_token_seconds_ = 0;
    std::thread engine_;
};

}  // namespace strata::server
