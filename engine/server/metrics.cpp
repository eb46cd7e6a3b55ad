// Server counters and their Prometheus exposition (metrics.h).
#include "engine/server/metrics.h"

#include <cstdio>
#include <sstream>

namespace strata::server {
namespace {

void family(std::ostringstream& out, const char* name, const char* type, const char* help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

template <typename T>
void metric(std::ostringstream& out, const char* name, const char* type, const char* help, T value) {
    family(out, name, type, help);
    out << name << " " << value << "\n";
}

}  // namespace

void Metrics::count_response(int status) {
    std::lock_guard lock(mutex_);
    ++responses_[status];
}

void Metrics::count_cancelled() {
    std::lock_guard lock(mutex_);
    ++cancelled_;
}

void Metrics::add_step(double seconds, int64_t n_prefilled, int64_t n_decoded, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    busy_seconds_ += seconds;
    prefilled_tokens_ += n_prefilled;
    decoded_tokens_ += n_decoded;
    recent_.push_back({now, n_prefilled, n_decoded});
    prune(now);
}

void Metrics::add_job(int64_t n_prompt, int64_t n_reused, int64_t n_generated) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += n_prompt;
    reused_tokens_ += n_reused;
    generated_tokens_ += n_generated;
}

void Metrics::prune(Clock::time_point now) const {
    while (!recent_.empty() && now - recent_.front().at > kWindow) recent_.pop_front();
}

double Metrics::window_rate(Clock::time_point now, int64_t Sample::*count) const {
    std::lock_guard lock(mutex_);
    prune(now);
    int64_t n = 0;
    for (const Sample& s : recent_) n += s.*count;
    return static_cast<double>(n) / std::chrono::duration<double>(kWindow).count();
}

double Metrics::decode_tokens_per_second(Clock::time_point now) const {
    return window_rate(now, &Sample::n_decoded);
}

double Metrics::prompt_tokens_per_second(Clock::time_point now) const {
    return window_rate(now, &Sample::n_prefilled);
}

std::string Metrics::prometheus(const SchedulerGauges& g, Clock::time_point now) const {
    const double decode_rate = decode_tokens_per_second(now);
    const double prompt_rate = prompt_tokens_per_second(now);
    std::ostringstream out;
    std::lock_guard lock(mutex_);
    family(out, "strata_requests_total", "counter", "Responses of the completion endpoints, by HTTP status.");
    for (const auto& [status, n] : responses_) out << "strata_requests_total{status=\"" << status << "\"} " << n << "\n";
    metric(out, "strata_requests_cancelled_total", "counter", "Requests whose client left before the end.", cancelled_);
    metric(out, "strata_prompt_tokens_total", "counter", "Prompt tokens of finished requests (reused included).",
           prompt_tokens_);
    metric(out, "strata_prompt_tokens_reused_total", "counter", "Prompt tokens whose KV cache a slot already held.",
           reused_tokens_);
    metric(out, "strata_generated_tokens_total", "counter", "Tokens generated for finished requests.",
           generated_tokens_);
    metric(out, "strata_prompt_tokens_evaluated_total", "counter", "Prompt tokens run through the model.",
           prefilled_tokens_);
    metric(out, "strata_decode_tokens_total", "counter", "Single-token decode steps run.", decoded_tokens_);
    metric(out, "strata_engine_busy_seconds_total", "counter", "Wall time the engine thread spent stepping slots.",
           busy_seconds_);
    metric(out, "strata_decode_tokens_per_second", "gauge", "Decoded tokens per second, all slots, last 10 s.",
           decode_rate);
    metric(out, "strata_prompt_tokens_per_second", "gauge", "Prompt tokens per second, all slots, last 10 s.",
           prompt_rate);
    metric(out, "strata_slots", "gauge", "Slots (--parallel).", g.n_slots);
    metric(out, "strata_requests_processing", "gauge", "Requests being generated.", g.n_active);
    metric(out, "strata_requests_queued", "gauge", "Requests waiting for a slot.", g.n_queued);
    metric(out, "strata_kv_cells_used", "gauge", "KV cache cells in use, all slots.", g.kv_cells_used);
    metric(out, "strata_kv_cells_total", "gauge", "KV cache cells, all slots.", g.kv_cells_total);
    metric(out, "strata_batched_decode_passes_total", "counter", "Decode passes over several slots at once.",
           g.batched_passes);
    metric(out, "strata_batched_decode_tokens_total", "counter", "Tokens decoded by those passes.", g.batched_rows);
    metric(out, "strata_batched_prompt_tokens_total", "counter",
           "Prompt tokens evaluated in those passes, beside the decode tokens (host placements).", g.batched_prompt_rows);
    metric(out, "strata_batched_pass_seconds_total", "counter",
           "Wall time of the batched passes: the model's forward pass and the logits' copy to the host.",
           g.batched_pass_seconds);
    metric(out, "strata_batched_token_seconds_total", "counter",
           "Wall time after those passes: sampling, detokenizing and handing out each row's token.",
           g.batched_token_seconds);
    metric(out, "strata_spec_passes_total", "counter", "Speculative passes (--spec lookup).", g.spec_passes);
    metric(out, "strata_spec_proposed_tokens_total", "counter", "Draft tokens those passes checked.", g.spec_proposed);
    metric(out, "strata_spec_accepted_tokens_total", "counter", "Draft tokens they kept.", g.spec_accepted);
    return out.str();
}

}  // namespace strata::server
