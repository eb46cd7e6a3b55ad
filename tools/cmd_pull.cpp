// strata pull owner/repo[:QUANT]: downloads one GGUF model from the Hugging Face hub into
// Strata's folder (engine/hub/hf_pull.h), with progress on a terminal; an interrupted pull
// resumes when run again. Prints the name -m accepts and the path.
#include <cstdio>
#include <memory>
#include <string>

#include "engine/core/error.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"
#include "tools/model_names.h"

namespace strata::cli {

void add_pull_command(CLI::App& app) {
    auto ref = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("pull", "download a GGUF model from the Hugging Face hub (HF_ENDPOINT, HF_TOKEN)");
    cmd->add_option("model", *ref, "owner/repo or owner/repo:QUANT (default Q4_K_M)")->required();
    cmd->callback([ref] {
        const PullResult r = pull_with_progress(*ref);
        std::printf("%s %s (%s)%s\n%s\n", r.already_there ? "already here:" : "pulled", r.name.c_str(),
                    format_bytes(r.bytes).c_str(),
                    r.resumed_from > 0 ? cat(", resumed at ", format_bytes(r.resumed_from)).c_str() : "",
                    r.path.c_str());
    });
}

}  // namespace strata::cli
