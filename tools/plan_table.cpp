// strata plan's summary table (plan_table.h).
#include "tools/plan_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "engine/core/error.h"
#include "offload/tier.h"

namespace strata::cli {
namespace {

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string tier_of(const Placement& p, const std::string& name) {
    const auto t = p.tier_of(name);
    return t ? upper(tier_name(*t)) : "-";
}

std::string ffn_text(const Placement& p, const TensorTable& table, int il) {
    if (const FfnSplit* s = p.ffn_split(il)) {
        const auto f = find_ffn_tensors(table, il);
        const int64_t n_ff = f ? f->n_ff : s->ram_end;
        std::string text = cat("GPU ", s->gpu_end, " / RAM ", s->ram_end - s->gpu_end);
        if (n_ff > s->ram_end) text += cat(" / DISK ", n_ff - s->ram_end);
        return text + " neurons";
    }
    const std::string prefix = cat("blk.", il, ".");
    if (const ExpertTiers* x = p.experts_of(il)) {  // experts placed one by one
        int64_t n[3] = {0, 0, 0};
        for (Tier t : x->tiers) ++n[t == Tier::Gpu ? 0 : t == Tier::Ram ? 1 : 2];
        std::string text = cat("router ", tier_of(p, prefix + "ffn_gate_inp.weight"), ", experts GPU ", n[0], " / RAM ", n[1]);
        if (n[2] > 0) text += cat(" / DISK ", n[2]);
        if (p.tier_of(prefix + "ffn_gate_shexp.weight")) text += ", shared " + tier_of(p, prefix + "ffn_gate_shexp.weight");
        return text;
    }
    if (p.tier_of(prefix + "ffn_gate_exps.weight")) {  // mixture of experts
        const std::string gate = tier_of(p, prefix + "ffn_gate_exps.weight");
        const std::string up = tier_of(p, prefix + "ffn_up_exps.weight");
        const std::string down = tier_of(p, prefix + "ffn_down_exps.weight");
        std::string text = cat("router ", tier_of(p, prefix + "ffn_gate_inp.weight"), ", experts ",
                               up == gate && down == gate ? gate : cat(gate, "/", up, "/", down));
        if (p.tier_of(prefix + "ffn_gate_shexp.weight")) text += ", shared " + tier_of(p, prefix + "ffn_gate_shexp.weight");
        return text;
    }
    const std::string up = tier_of(p, prefix + "ffn_up.weight");
    // phi3 has no ffn_gate: its gate rows are in ffn_up.
    const std::string gate = p.tier_of(prefix + "ffn_gate.weight") ? tier_of(p, prefix + "ffn_gate.weight") : up;
    const std::string down = tier_of(p, prefix + "ffn_down.weight");
    if (up == gate && down == gate) return gate;
    return cat("gate ", gate, ", up ", up, ", down ", down);
}

// A segment's seconds per token: every term the cost model adds for it.
double segment_seconds(const CostModel& cm, const Layout& layout, int s) {
    const CostTerms t = cm.segment(layout, s);
    return t.gpu_s + t.cpu_s + t.disk_s + t.transfer_s + t.gpu_fixed_s + t.cpu_fixed_s;
}

std::string share_text(double share) {
    if (share < 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
    return buf;
}

}  // namespace

std::vector<PlanRow> plan_rows(const Placement& p, const TensorTable& table, const CostModel* cm) {
    const int n_layer = table.n_layer;
    std::vector<uint64_t> layer_bytes(static_cast<size_t>(n_layer) + 1, 0);  // [n_layer]: globals
    for (const TensorEntry& t : table.tensors) {
        const int l = tensor_layer(t.name);
        layer_bytes[static_cast<size_t>(l >= 0 && l < n_layer ? l : n_layer)] += t.bytes;
    }
    std::vector<double> seconds(static_cast<size_t>(n_layer) + 1, -1);
    double total = 0;
    if (cm) {
        const Layout layout = cm->layout_of(p);
        for (int s = 0; s < cm->n_segments(); ++s) total += seconds[static_cast<size_t>(s)] = segment_seconds(*cm, layout, s);
    }
    std::vector<PlanRow> rows;
    for (int il = 0; il < n_layer; ++il) {
        PlanRow r;
        r.first = r.last = il;
        const std::string q = cat("blk.", il, ".attn_q.weight");
        r.attention = tier_of(p, p.tier_of(q) ? q : cat("blk.", il, ".attn_qkv.weight"));  // phi3: fused
        r.kv = upper(tier_name(p.kv.at(static_cast<size_t>(il))));
        r.ffn = ffn_text(p, table, il);
        r.weight_bytes = layer_bytes[static_cast<size_t>(il)];
        r.kv_bytes = kv_bytes_per_layer(table, il, p.n_ctx, p.kv_type);
        r.time_share = total > 0 ? seconds[static_cast<size_t>(il)] / total : -1;
        PlanRow* prev = rows.empty() ? nullptr : &rows.back();
        if (prev && prev->attention == r.attention && prev->kv == r.kv && prev->ffn == r.ffn) {
            prev->last = il;
            prev->weight_bytes += r.weight_bytes;
            prev->kv_bytes += r.kv_bytes;
            if (r.time_share >= 0) prev->time_share += r.time_share;
        } else {
            rows.push_back(r);
        }
    }
    for (PlanRow& r : rows) r.layers = r.first == r.last ? cat(r.first) : cat(r.first, "-", r.last);
    PlanRow g;
    g.layers = "output";
    g.first = g.last = n_layer;
    g.attention = g.kv = "-";
    g.ffn = cat("output matrix ", tier_of(p, p.tier_of("output.weight") ? "output.weight" : "token_embd.weight"),
                ", embeddings ", tier_of(p, "token_embd.weight"));
    g.weight_bytes = layer_bytes[static_cast<size_t>(n_layer)];
    g.time_share = total > 0 ? seconds[static_cast<size_t>(n_layer)] / total : -1;
    rows.push_back(g);
    return rows;
}

void print_plan_table(const std::vector<PlanRow>& rows, std::FILE* out) {
    std::vector<std::vector<std::string>> cells = {
        {"layers", "attention", "KV cache", "feed-forward (FFN)", "weights", "KV", "token time"}};
    for (const PlanRow& r : rows) {
        cells.push_back({r.layers, r.attention, r.kv, r.ffn, format_bytes(r.weight_bytes),
                         r.kv_bytes > 0 ? format_bytes(r.kv_bytes) : "-", share_text(r.time_share)});
    }
    std::vector<size_t> width(cells[0].size(), 0);
    for (const auto& row : cells) {
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    for (size_t i = 0; i < cells.size(); ++i) {
        std::string line = " ";
        for (size_t c = 0; c < cells[i].size(); ++c) {
            const bool right = c >= 4;  // numbers
            const std::string& s = cells[i][c];
            const std::string pad(width[c] - s.size(), ' ');
            line += " " + (right ? pad + s : s + pad) + " ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::fprintf(out, "%s\n", line.c_str());
    }
}

void print_tier_table(const Placement& p, const TensorTable& table) {
    const TierBytes w = placement_bytes(p, table);
    uint64_t kv_gpu = 0, kv_ram = 0;
    for (int il = 0; il < table.n_layer; ++il) {
        (p.kv.at(static_cast<size_t>(il)) == Tier::Gpu ? kv_gpu : kv_ram) += kv_bytes_per_layer(table, il, p.n_ctx, p.kv_type);
    }
    std::printf("  %-5s %12s %12s %12s\n", "tier", "weights", "KV cache", "budget");
    std::printf("  %-5s %12s %12s %12s\n", "GPU", format_bytes(w.gpu).c_str(), format_bytes(kv_gpu).c_str(),
                p.budgets.gpu_bytes > 0 ? format_bytes(p.budgets.gpu_bytes).c_str() : "none");
    std::printf("  %-5s %12s %12s %12s\n", "RAM", format_bytes(w.ram).c_str(), format_bytes(kv_ram).c_str(),
                format_bytes(p.budgets.ram_bytes).c_str());
    std::printf("  %-5s %12s %12s %12s\n", "DISK", format_bytes(w.disk).c_str(), "-", "-");
}

nlohmann::json plan_rows_json(const std::vector<PlanRow>& rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const PlanRow& r : rows) {
        nlohmann::json j = {{"layers", r.layers}, {"weight_bytes", r.weight_bytes},
                            {"token_time_share", r.time_share >= 0 ? nlohmann::json(r.time_share) : nlohmann::json()}};
        if (r.layers != "output") {
            j["first"] = r.first;
            j["last"] = r.last;
            j["attention"] = r.attention;
            j["kv"] = r.kv;
            j["kv_bytes"] = r.kv_bytes;
        }
        j["ffn"] = r.ffn;
        out.push_back(j);
    }
    return out;
}

}  // namespace strata::cli
