// The engine thread: admission, prefix-aware slot choice, then per iteration one pass over the
// decode tokens (with the prompt chunks that fit, on host placements) and a pass per other
// prompt chunk (scheduler.h).
#include "engine/server/scheduler.h"

#include <chrono>
#include <cstdio>

#include "engine/core/env_switch.h"
#include "engine/core/error.h"
#include "engine/server/api_error.h"

namespace strata::server {

Scheduler::Scheduler(std::vector<std::unique_ptr<Session>> sessions, const SchedulerOptions& options,
                     Metrics* metrics)
    : options_(options), metrics_(metrics) {
    if (env_turned_off("STRATA_SERVE_FUSE_PROMPTS")) options_.fuse_prompts = false;
    if (sessions.empty()) throw ArgumentError("the scheduler needs at least one session");
    if (options.max_queue < 0) throw ArgumentError(cat("queue length must be >= 0, got ", options.max_queue));
    n_ctx_ = sessions.front()->n_ctx();
    for (auto& s : sessions) {
        if (s->n_ctx() != n_ctx_) {
            throw ArgumentError(cat("scheduler sessions differ in context: ", s->n_ctx(), " and ", n_ctx_));
        }
        slots_.emplace_back(std::move(s), options.chunk_tokens, options.spec);
    }
    Session& first = slots_.front().session();
    bool shared = slots_.size() > 1 && options.batch_decode;
    for (Slot& s : slots_) shared = shared && &s.session().placed() == &first.placed();
    if (shared) batch_ = std::make_unique<BatchStep>(first.placed(), first.program().sparse());
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
    g.batched_passes = batched_passes_;
    g.batched_rows = batched_rows_;
    g.batched_prompt_rows = batched_prompt_rows_;
    g.spec_passes = spec_passes_;
    g.spec_proposed = spec_proposed_;
    g.spec_accepted = spec_accepted_;
    g.batched_pass_seconds = batched_pass_seconds_;
    g.batched_token_seconds = batched_token_seconds_;
    return g;
}

Slot& Scheduler::pick_slot(const JobSpec& spec) {
    Slot* best = nullptr;
    int64_t best_prefix = -1;
    for (Slot& s : slots_) {
        if (s.busy()) continue;
        const int64_t prefix = spec.cache_prompt ? s.reusable_prefix(spec.prompt) : 0;  // else the least recent
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
        if (job->past_deadline(options_.request_timeout_s)) {
            job->finish(JobResult{.status = 504, .error = cat("the request waited in the queue past the server's "
                                                              "--request-timeout of ", options_.request_timeout_s, " s")});
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

StepStats Scheduler::step_all() {
    StepStats total;
    std::vector<Slot*> decoding;
    int64_t n_busy = 0;
    for (Slot& s : slots_) n_busy += s.busy() ? 1 : 0;
    auto add = [&](const StepStats& st) {
        total.n_prefilled += st.n_prefilled;
        total.n_decoded += st.n_decoded;
        total.n_spec_passes += st.n_spec_passes;
        total.n_spec_proposed += st.n_spec_proposed;
        total.n_spec_accepted += st.n_spec_accepted;
    };
    std::vector<Slot*> prompts;  // prefilling slots whose chunk rides in the decode pass
    for (Slot& s : slots_) {
        if (s.drop_if_gone(options_.request_timeout_s) || !s.decoding()) continue;
        if (batch_) {
            decoding.push_back(&s);
        } else {
            add(s.step(/*alone=*/n_busy == 1));
        }
    }
    // Prompt chunks join the pass while its rows last (host placements; decode rows first).
    const bool fuse = batch_ && options_.fuse_prompts && batch_->takes_prompt_rows() && n_busy > 1 &&
                      static_cast<int64_t>(decoding.size()) < batch_->max_rows();
    int64_t rows = static_cast<int64_t>(decoding.size());
    for (Slot& s : slots_) {
        if (!s.prefilling()) continue;
        const auto n = static_cast<int64_t>(s.next_chunk().size());
        if (fuse && rows + n <= batch_->max_rows() && n <= s.session().kv_cache().max_batch()) {
            prompts.push_back(&s);
            rows += n;
            continue;
        }
        add(s.step(/*alone=*/n_busy == 1));
    }
    if (!prompts.empty() && decoding.size() + prompts.size() > 1) {
        decoding.insert(decoding.end(), prompts.begin(), prompts.end());
        add(batched_pass(decoding));
    } else {
        for (Slot* s : prompts) add(s->step(/*alone=*/n_busy == 1));
        if (!decoding.empty()) add(decode_batch(decoding, /*alone=*/n_busy == 1));
    }
    if (total.n_spec_passes > 0) {
        std::lock_guard lock(mutex_);
        spec_passes_ += total.n_spec_passes;
        spec_proposed_ += total.n_spec_proposed;
        spec_accepted_ += total.n_spec_accepted;
    }
    return total;
}

StepStats Scheduler::decode_batch(const std::vector<Slot*>& slots, bool alone) {
    if (slots.size() == 1) return slots.front()->step(alone);  // keeps the session's own step graph
    return batched_pass(slots);
}

StepStats Scheduler::batched_pass(const std::vector<Slot*>& slots) {
    std::vector<Session*> sessions;
    std::vector<TokenId> tokens(slots.size());  // the decode tokens (sized once: chunks point in)
    std::vector<std::span<const TokenId>> chunks;
    std::vector<int64_t> prompt_rows;
    StepStats stats;
    for (size_t i = 0; i < slots.size(); ++i) {
        Slot* s = slots[i];
        sessions.push_back(&s->session());
        if (s->prefilling()) {
            chunks.push_back(s->next_chunk());
            prompt_rows.push_back(static_cast<int64_t>(chunks.back().size()));
            stats.n_prefilled += prompt_rows.back();
        } else {
            tokens[i] = s->next_token();
            chunks.emplace_back(&tokens[i], 1);
            prompt_rows.push_back(0);
            ++stats.n_decoded;
        }
    }
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    std::span<const float> logits;
    try {
        // Decode tokens alone go in groups of the step's rows (any placement).
        logits = stats.n_prefilled > 0 ? batch_->step_rows(sessions, chunks) : batch_->decode(sessions, tokens);
    } catch (const std::exception& e) {
        for (Slot* s : slots) s->fail(e.what());
        return {};
    }
    const Clock::time_point passed = Clock::now();
    const size_t n_vocab = logits.size() / slots.size();
    for (size_t i = 0; i < slots.size(); ++i) slots[i]->took_rows(prompt_rows[i], logits.subspan(i * n_vocab, n_vocab));
    std::lock_guard lock(mutex_);
    ++batched_passes_;
    batched_rows_ += stats.n_decoded;
    batched_prompt_rows_ += stats.n_prefilled;
    batched_pass_seconds_ += std::chrono::duration<double>(passed - start).count();
    batched_token_seconds_ += std::chrono::duration<double>(Clock::now() - passed).count();
    return stats;
}

void Scheduler::run() {
    using Clock = std::chrono::steady_clock;
    static const bool trace = env_turned_on("STRATA_SERVE_TRACE");
    const Clock::time_point began = Clock::now();
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
        const StepStats total = step_all();
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (metrics_) metrics_->add_step(seconds, total.n_prefilled, total.n_decoded);
        if (trace) {  // STRATA_SERVE_TRACE=1: where a run's time goes, step by step
            std::fprintf(stderr, "[step] at %.1f ms: %.2f ms, %lld prompt tokens, %lld decoded, %lld busy\n",
                         std::chrono::duration<double, std::milli>(start - began).count(), 1e3 * seconds,
                         static_cast<long long>(total.n_prefilled), static_cast<long long>(total.n_decoded),
                         static_cast<long long>(n_active_));
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
