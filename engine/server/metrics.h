// Metrics: the server's counters and recent rates, and their Prometheus text exposition
// (GET /metrics): requests by status, prompt and generated tokens, reused prompt tokens,
// queue depth, active slots, KV cells in use, and decode/prompt tokens per second over the
// last ten seconds. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace strata::server {

// What the scheduler holds at the moment of a scrape.
struct SchedulerGauges {
    int64_t n_slots = 0;
    int64_t n_active = 0;
    int64_t n_queued = 0;
    int64_t kv_cells_used = 0;
    int64_t kv_cells_total = 0;
    int64_t batched_passes = 0;  // decode passes over several slots' tokens, since the start
    int64_t batched_rows = 0;    // tokens those passes decoded
    int64_t batched_prompt_rows = 0;  // prompt tokens evaluated in those passes (host placements)
    int64_t spec_passes = 0;     // speculative passes (prompt lookup), their draft tokens, and
    int64_t spec_proposed = 0;   // the draft tokens kept, since the start
    int64_t spec_accepted = 0;
    double batched_pass_seconds = 0;   // wall time of those passes (the model, logits to the host)
    double batched_token_seconds = 0;  // and of their rows' tokens: sampling, detokenizing, handing
                                       // the text to the HTTP threads
};

class Metrics {
public:
    using Clock = std::chrono::steady_clock;

    // One HTTP response on a generation endpoint, by status (200, 400, 429...).
    void count_response(int status);
    // A request whose client left before it finished.
    void count_cancelled();
    // One engine iteration: its wall time, prompt tokens evaluated, tokens decoded.
    void add_step(double seconds, int64_t n_prefilled, int64_t n_decoded, Clock::time_point now = Clock::now());
    // A finished job: prompt tokens (reused ones included) and the ones whose KV was reused.
    void add_job(int64_t n_prompt, int64_t n_reused, int64_t n_generated);

    std::string prometheus(const SchedulerGauges& gauges, Clock::time_point now = Clock::now()) const;

    // Tokens per second over the window ending at `now` (wall time, all slots together).
    double decode_tokens_per_second(Clock::time_point now) const;
    double prompt_tokens_per_second(Clock::time_point now) const;

private:
    struct Sample {
        Clock::time_point at;
        int64_t n_prefilled, n_decoded;
    };
    void prune(Clock::time_point now) const;  // drops samples older than the window (mutex_ held)
    double window_rate(Clock::time_point now, int64_t Sample::*count) const;

    static constexpr std::chrono::seconds kWindow{10};
    mutable std::mutex mutex_;
    std::map<int, int64_t> responses_;
    int64_t cancelled_ = 0;
    int64_t prompt_tokens_ = 0, reused_tokens_ = 0, generated_tokens_ = 0;
    int64_t prefilled_tokens_ = 0, decoded_tokens_ = 0;
    double busy_seconds_ = 0;
    mutable std::deque<Sample> recent_;
};

}  // namespace strata::server
