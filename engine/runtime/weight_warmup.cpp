// Reads the RAM tier's mapped weights in (see weight_warmup.h).
#include "engine/runtime/weight_warmup.h"

#include <unistd.h>

#include "engine/runtime/model.h"
#include "offload/placement.h"

namespace strata {

uint64_t warm_up_ram_weights(const Model& model, const Placement& placement, const WarmupProgress& progress) {
    struct Range {
        const uint8_t* data;
        uint64_t n;
    };
    std::vector<Range> ranges;
    uint64_t total = 0;
    const ModelFile& file = model.file();
    for (int s = 0; s < file.n_shards(); ++s) {
        const GgufFile& shard = file.shard(s);
        for (const TensorInfo& t : shard.tensors()) {
            if (placement.tier_of(t.name) != Tier::Ram) continue;
            ranges.push_back({shard.bytes() + t.file_offset, t.n_bytes});
            total += t.n_bytes;
        }
    }
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t done = 0;
    volatile uint8_t sink = 0;  // the reads must happen
    for (const Range& r : ranges) {
        uint8_t acc = 0;
        for (uint64_t off = 0; off < r.n; off += page) acc ^= r.data[off];
        sink = sink ^ acc;
        done += r.n;
        if (progress) progress(done, total);
    }
    return done;
}

}  // namespace strata
