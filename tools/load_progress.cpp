// Load progress bars (see load_progress.h).
#include "tools/load_progress.h"

#include <memory>
#include <string>

#include "tools/progress_bar.h"

namespace strata::cli {

std::function<void(std::string_view, std::string_view, uint64_t, uint64_t)> load_progress() {
    if (!stderr_is_terminal()) return {};
    struct State {
        std::string step;
        std::unique_ptr<ProgressBar> bar;
    };
    auto state = std::make_shared<State>();
    return [state](std::string_view step, std::string_view item, uint64_t done, uint64_t total) {
        if (step != state->step || !state->bar) {
            state->step = std::string(step);
            const std::string unit = step == "placing weights" ? "layers" : step == "profiling" ? "steps" : "";
            state->bar = std::make_unique<ProgressBar>(std::string(step), ProgressStyle{unit, 1.0});
        }
        state->bar->update(done, total, item);
        if (total > 0 && done >= total) {
            state->bar->finish();
            state->bar.reset();
        }
    };
}

}  // namespace strata::cli
