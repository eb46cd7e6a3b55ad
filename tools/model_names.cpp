// Models by name on every command (see model_names.h).
#include "tools/model_names.h"

#include <cstdio>
#include <memory>

#include "engine/hub/hf_pull.h"
#include "engine/hub/model_catalog.h"
#include "engine/hub/model_resolver.h"
#include "tools/progress_bar.h"

namespace strata::cli {

std::string resolve_model_arg(const std::string& text) {
    // A path that exists, or one spelled as a path ("/x", "./x", "~/x"), is not a name: the
    // loader names a missing file.
    const bool spelled_as_path = text.starts_with("/") || text.starts_with("./") || text.starts_with("../") ||
                                 text.starts_with("~");
    if (text.empty() || spelled_as_path || is_existing_path(text)) return text;
    const ModelCatalog catalog = scan_models(model_places_from_env());
    try {
        return find_model(catalog, text).path;
    } catch (const ModelNameError& e) {
        std::fprintf(stderr, "%s", e.details().c_str());
        throw;
    }
}

PullResult pull_with_progress(const std::string& ref_text) {
    const HfRef ref = parse_hf_ref(ref_text);
    ProgressBar bar("pull");
    PullOptions options;
    options.on_progress = [&](std::string_view file, uint64_t done, int64_t total) {
        bar.update(done, total < 0 ? 0 : static_cast<uint64_t>(total), file);
    };
    PullResult r = pull_hf_model(ref, options);
    bar.finish();
    return r;
}

void add_model_names(CLI::App& app) {
    for (CLI::App* sub : app.get_subcommands({})) {
        CLI::Option* model = sub->get_option_no_throw("--model");
        if (model == nullptr) continue;
        model->transform(CLI::Validator(
            [](std::string& value) {
                value = resolve_model_arg(value);
                return std::string();
            },
            "PATH|NAME", "model path or name"));
        model->description(model->get_description() + " (a path, or a name from 'strata list')");
        sub->add_option_function<std::string>(
               "--hf-repo",
               [model](const std::string& ref) {
                   if (model->count() > 0) {
                       throw ArgumentError("give the model with -m or with -hf/--hf-repo, not both");
                   }
                   const PullResult pulled = pull_with_progress(ref);
                   if (!pulled.already_there) {
                       std::fprintf(stderr, "pulled %s into %s\n", pulled.name.c_str(), pulled.path.c_str());
                   }
                   model->add_result(pulled.path);
                   model->run_callback();
               },
               "pull owner/repo[:QUANT] from the Hugging Face hub (llama.cpp's -hf), then use it")
            ->type_name("REPO[:QUANT]");
    }
}

}  // namespace strata::cli
