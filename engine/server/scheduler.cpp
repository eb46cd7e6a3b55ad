// The engine thread: admission, prefix-aware slot choice, one step per busy slot (scheduler.h).
#include "engine/server/scheduler.h"

#include <chrono>

#include "engine/core/error.h"
#include "engine/server/api_error.h"

namespace strata::server {

Scheduler::Scheduler(std::vector<std::unique_ptr<Session>> sessions, const SchedulerOptions& options,
                     Metrics* metrics)
    : options_(options), metrics_(metrics) {
    if (sessions.empty()) throw ArgumentError("the scheduler needs at least one session");
    if (options.max_queue < 0) throw ArgumentError(cat("queue length must be >= 0, got ", options.max_queue));
    n_ctx_ = sessions.front()->n_ctx();
    for (auto& s : sessions) {
        if (s->n_ctx() != n_ctx_) {
            throw ArgumentError(cat("scheduler sessions differ in context: ", s->n_ctx(), " and ", n_ctx_));
        }
        slots_.emplace_back(std::move(s), options.chunk_tokens);
    }
    engine_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { shutdown("the server is shutting down"); }

void Scheduler::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw ApiError(503, "the server is shutting down");
        if (static_cast<int64_t>(queue_.size()) >= options_.max_queue) {
            throw ApiError(429, cat("the server is busy: ", queue_.size(), " requests are already waiting for one of ",
                                    slots_.size(), " slots; retry later"));
        }
        queue_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void Scheduler::shutdown(const std::string& reason) {
    {
        std::lock_guard lock(mutex_);
        if (!stopping_) {
            stopping_ = true;
            stop_reason_ = reason;
        }
    }
    wake_.notify_all();
    if (engine_.joinable()) engine_.join();
}

SchedulerGauges Scheduler::gauges() const {
    std::lock_guard lock(mutex_);
    SchedulerGauges g;
    g.n_slots = static_cast<int64_t>(slots_.size());
    g.n_active = n_active_;
    g.n_queued = static_cast<int64_t>(queue_.size());
    g.kv_cells_used = kv_cells_used_;
    g.kv_cells_total = n_ctx_ * g.n_slots;
    return g;
}

Slot& Scheduler::pick_slot(const JobSpec& spec) {
    Slot* best = nullptr;
    int64_t best_prefix = -1;
    for (Slot& s : slots_) {
        if (s.busy()) continue;
        const int64_t prefix = s.reusable_prefix(spec.prompt);
        if (prefix > best_prefix || (prefix == best_prefix && s.last_used < best->last_used)) {
            best = &s;
            best_prefix = prefix;
        }
    }
    STRATA_INVARIANT(best != nullptr);
    return *best;
}

void Scheduler::admit_locked() {
    int64_t n_free = 0;
    for (const Slot& s : slots_) n_free += s.busy() ? 0 : 1;
    while (n_free > 0 && !queue_.empty()) {
        std::shared_ptr<Job> job = std::move(queue_.front());
        queue_.pop_front();
        if (job->cancelled()) {
            job->finish(JobResult{.status = 499, .error = "the client closed the connection"});
            continue;
        }
        Slot& slot = pick_slot(job->spec());
        slot.last_used = ++use_counter_;
        try {
            slot.start(job);
            --n_free;
        } catch (const std::exception& e) {
            job->finish(JobResult{.status = 500, .error = std::string("cannot start the request: ") + e.what()});
        }
    }
}

void Scheduler::run() {
    using Clock = std::chrono::steady_clock;
    while (true) {
        {
            std::unique_lock lock(mutex_);
            admit_locked();
            int64_t active = 0, cells = 0;
            for (const Slot& s : slots_) {
                active += s.busy() ? 1 : 0;
                cells += s.n_cells_used();
            }
            n_active_ = active;
            kv_cells_used_ = cells;
            if (stopping_) break;
            if (active == 0) {
                wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                continue;
            }
        }
        const Clock::time_point start = Clock::now();
        StepStats total;
        for (Slot& s : slots_) {
            const StepStats st = s.step();
            total.n_prefilled += st.n_prefilled;
            total.n_decoded += st.n_decoded;
        }
        if (metrics_) {
            metrics_->add_step(std::chrono::duration<double>(Clock::now() - start).count(), total.n_prefilled,
                               total.n_decoded);
        }
    }
    // Shutting down (mutex_ released): every job still here ends with the reason.
    std::deque<std::shared_ptr<Job>> left;
    {
        std::lock_guard lock(mutex_);
        left.swap(queue_);
    }
    for (auto& job : left) job->finish(JobResult{.status = 503, .error = stop_reason_});
    for (Slot& s : slots_) s.abort(503, stop_reason_);
}

}  // namespace strata::server
