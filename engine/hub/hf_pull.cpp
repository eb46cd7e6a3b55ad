// Pulls one GGUF model from the Hugging Face hub (see hf_pull.h).
#include "engine/hub/hf_pull.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/hub/catalog_scan.h"
#include "engine/hub/model_catalog.h"
#include "engine/hub/quant_tag.h"
#include "engine/hub/resumable_download.h"

namespace strata {
namespace {

constexpr uint64_t kMaxFileListBytes = 16ull << 20;
constexpr std::string_view kDefaultEndpoint = "https://huggingface.co";

bool is_repo_word(std::string_view w) {
    if (w.empty() || w.size() > 96 || w == "." || w == ".." || w.starts_with("-")) return false;
    for (char c : w) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
    }
    return true;
}

std::string env_or(const char* name, std::string_view fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : std::string(fallback);
}

std::string list_gguf(const std::vector<HfFile>& files) {
    std::string out;
    for (const HfFile& f : files) {
        if (is_gguf_name(f.path)) out += (out.empty() ? "" : ", ") + f.path;
    }
    return out.empty() ? "none" : out;
}

// Siblings of the hub's model answer: [{"rfilename": "...", "size": N}, ...].
std::vector<HfFile> parse_file_list(const std::string& body, const std::string& url) {
    const nlohmann::json j = parse_json_bounded(body, "Hugging Face file list");
    if (!j.is_object() || !j.contains("siblings") || !j["siblings"].is_array()) {
        throw FormatError(cat(url, ": the answer has no \"siblings\" array of files"));
    }
    std::vector<HfFile> files;
    for (const auto& s : j["siblings"]) {
        if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) continue;
        HfFile f;
        f.path = s["rfilename"].get<std::string>();
        if (s.contains("size") && s["size"].is_number_unsigned()) f.size = s["size"].get<int64_t>();
        files.push_back(std::move(f));
    }
    return files;
}

// The file and the other parts of its split model, in order.
std::vector<HfFile> with_split_parts(const HfFile& first, const std::vector<HfFile>& files) {
    const SplitPart part = split_part_of(first.path);
    if (part.count <= 1) return {first};
    std::vector<HfFile> parts(static_cast<size_t>(part.count));
    const std::string prefix = first.path.substr(0, first.path.size() - std::string("00001-of-00005.gguf").size());
    for (const HfFile& f : files) {
        const SplitPart p = split_part_of(f.path);
        if (p.count == part.count && f.path.starts_with(prefix)) parts[static_cast<size_t>(p.index - 1)] = f;
    }
    for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].path.empty()) {
            throw FormatError(cat(first.path, " is part 1 of ", part.count, " but part ", i + 1, " is not in the repository"));
        }
    }
    return parts;
}

}  // namespace

HfRef parse_hf_ref(std::string_view text) {
    HfRef ref;
    const size_t colon = text.find(':');
    ref.repo = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) ref.quant = std::string(text.substr(colon + 1));
    const size_t slash = ref.repo.find('/');
    const bool ok = slash != std::string::npos && is_repo_word(std::string_view(ref.repo).substr(0, slash)) &&
                    is_repo_word(std::string_view(ref.repo).substr(slash + 1)) &&
                    (colon == std::string_view::npos || is_repo_word(ref.quant));
    if (!ok) {
        throw ArgumentError(cat("'", text.substr(0, 200), "' is not a Hugging Face model reference: expected ",
                                "owner/repo or owner/repo:QUANT (e.g. Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M)"));
    }
    return ref;
}

const HfFile& choose_hf_file(const HfRef& ref, const std::vector<HfFile>& files) {
    std::vector<const HfFile*> models;
    for (const HfFile& f : files) {
        const std::string base = std::filesystem::path(f.path).filename().string();
        if (is_gguf_name(base) && !istarts_with(base, "mmproj") && split_part_of(base).index <= 1) models.push_back(&f);
    }
    const std::string want = ref.quant.empty() ? "Q4_K_M" : ref.quant;
    std::vector<const HfFile*> hits;
    for (const HfFile* f : models) {
        if (iequals(quant_tag_of(std::filesystem::path(f->path).filename().string()), want)) hits.push_back(f);
    }
    if (hits.empty() && ref.quant.empty() && models.size() == 1) return *models.front();
    if (hits.size() == 1) return *hits.front();
    if (hits.empty()) {
        throw ArgumentError(cat(ref.repo, " has no GGUF file of type ", want,
                                ref.quant.empty() ? " (the default; name one as owner/repo:QUANT)" : "",
                                "; its GGUF files: ", list_gguf(files)));
    }
    std::vector<HfFile> listed;
    for (const HfFile* f : hits) listed.push_back(*f);
    throw ArgumentError(cat(ref.repo, " has ", hits.size(), " GGUF files of type ", want, ": ", list_gguf(listed),
                            "; download one by hand into ", strata_models_dir()));
}

PullResult pull_hf_model(const HfRef& ref, const PullOptions& options) {
    std::string endpoint = options.endpoint.empty() ? env_or("HF_ENDPOINT", kDefaultEndpoint) : options.endpoint;
    while (endpoint.ends_with("/")) endpoint.pop_back();
    HttpRequest list_request;
    list_request.url = cat(endpoint, "/api/models/", ref.repo, "?blobs=true");
    list_request.bearer_token = env_or("HF_TOKEN", "");
    std::string body;
    try {
        body = http_get_text(list_request, kMaxFileListBytes);
    } catch (const HttpStatusError& e) {
        if (e.status() == 401 || e.status() == 403) {
            throw HttpStatusError(cat(ref.repo, " on ", endpoint, " needs access (HTTP ", e.status(),
                                      "): accept its terms on the hub and set HF_TOKEN"), e.status());
        }
        if (e.status() == 404) {
            throw HttpStatusError(cat("no repository ", ref.repo, " on ", endpoint, " (HTTP 404)"), 404);
        }
        throw;
    }
    const std::vector<HfFile> files = parse_file_list(body, list_request.url);
    const HfFile& chosen = choose_hf_file(ref, files);
    const std::string dir = cat(options.models_dir.empty() ? strata_models_dir() : options.models_dir, "/", ref.repo);
    PullResult result;
    for (const HfFile& f : with_split_parts(chosen, files)) {
        std::string url = cat(endpoint, "/", ref.repo, "/resolve/main");
        for (const auto& seg : std::filesystem::path(f.path)) url += "/" + url_encode_segment(seg.string());
        DownloadRequest req;
        req.http.url = url;
        req.http.bearer_token = list_request.bearer_token;
        req.target = cat(dir, "/", std::filesystem::path(f.path).filename().string());
        req.expected_size = f.size;
        if (options.on_progress) {
            req.on_progress = [&](uint64_t done, int64_t total) { options.on_progress(f.path, done, total); };
        }
        const DownloadResult d = download_resumable(req);
        if (result.path.empty()) {
            result.path = req.target;
            result.already_there = d.already_there;
        }
        result.bytes += d.bytes;
        result.resumed_from += d.resumed_from;
    }
    result.name = hub_detail::repo_model_name(ref.repo, std::filesystem::path(chosen.path).filename().string());
    return result;
}

}  // namespace strata
