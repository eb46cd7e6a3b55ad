// HTTP(S) GET with redirects over cpp-httplib (see http_get.h).
#include "engine/hub/http_get.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace strata {
namespace {

constexpr int kMaxRedirects = 8;

std::string header(const httplib::Response& r, const char* name) {
    return r.has_header(name) ? r.get_header_value(name) : std::string();
}

// A Location may be absolute or relative to the current URL's origin.
std::string next_url(const std::string& origin, const std::string& location) {
    if (location.starts_with("http://") || location.starts_with("https://")) return location;
    if (location.starts_with("/")) return origin + location;
    throw SystemError(cat("redirect to '", location.substr(0, 200), "' is not a URL Strata follows"));
}

}  // namespace

std::pair<std::string, std::string> split_url(std::string_view url) {
    const size_t scheme_end = url.find("://");
    const std::string_view scheme = url.substr(0, scheme_end == std::string_view::npos ? 0 : scheme_end);
    if (scheme != "http" && scheme != "https") {
        throw ArgumentError(cat("'", url.substr(0, 200), "' is not an http:// or https:// URL"));
    }
    const size_t path_start = url.find('/', scheme_end + 3);
    std::string origin(url.substr(0, path_start));
    std::string path = path_start == std::string_view::npos ? "/" : std::string(url.substr(path_start));
    if (origin.size() == scheme_end + 3) throw ArgumentError(cat("'", url, "' has no host"));
    return {origin, path};
}

std::string url_encode_segment(std::string_view segment) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : segment) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

HttpHead http_get(const HttpRequest& request, const HttpHeadFn& on_head, const HttpBodyFn& on_body) {
    std::string url = request.url;
    const std::string first_origin = split_url(url).first;
    for (int hop = 0; hop <= kMaxRedirects; ++hop) {
        const auto [origin, path] = split_url(url);
        httplib::Client client(origin);
        if (!client.is_valid()) throw SystemError(cat("cannot open a client for ", origin, " (HTTPS without OpenSSL?)"));
        client.set_connection_timeout(request.timeout_s);
        client.set_read_timeout(request.timeout_s);
        client.set_follow_location(false);
        httplib::Headers headers;
        if (!request.range.empty()) headers.emplace("Range", request.range);
        if (!request.bearer_token.empty() && origin == first_origin) {
            headers.emplace("Authorization", "Bearer " + request.bearer_token);
        }
        HttpHead head;
        head.final_url = url;
        std::optional<std::string> location;
        bool deliver = false;
        auto on_response = [&](const httplib::Response& r) {
            head.status = r.status;
            if (r.status >= 300 && r.status < 400 && r.has_header("Location")) {
                location = r.get_header_value("Location");
                return true;  // the redirect's own body is read and dropped
            }
            head.content_range = header(r, "Content-Range");
            const std::string len = header(r, "Content-Length");
            if (!len.empty() && std::all_of(len.begin(), len.end(), [](char c) { return c >= '0' && c <= '9'; }) && len.size() < 19) {
                head.content_length = std::stoll(len);
            }
            const bool ok = (r.status >= 200 && r.status < 300) || r.status == 416;
            deliver = ok && on_head(head);
            return true;  // error bodies are read for the message
        };
        std::string error_body;
        auto on_data = [&](const char* data, size_t n) {
            if (location) return true;
            if (head.status < 200 || head.status >= 300) {
                if (error_body.size() < 4096) error_body.append(data, std::min<size_t>(n, 4096));
                return true;
            }
            return deliver ? on_body(std::string_view(data, n)) : false;
        };
        const httplib::Result result = client.Get(path, headers, on_response, on_data);
        if (location) {
            url = next_url(origin, *location);
            continue;
        }
        if (!result && !(result.error() == httplib::Error::Canceled && head.status != 0)) {
            const bool untrusted = result.error() == httplib::Error::SSLServerVerification;
            throw SystemError(cat("GET ", url, ": ", httplib::to_string(result.error()),
                                  head.status ? cat(" after status ", head.status) : std::string(),
                                  untrusted ? " (the server's certificate is not trusted for this host; "
                                              "SSL_CERT_FILE or SSL_CERT_DIR name more CA certificates)"
                                            : ""));
        }
        if ((head.status < 200 || head.status >= 300) && head.status != 416) {
            throw HttpStatusError(cat("GET ", url, ": HTTP ", head.status,
                                      error_body.empty() ? "" : ": " + error_body.substr(0, 200)),
                                  head.status);
        }
        return head;
    }
    throw SystemError(cat("GET ", request.url, ": more than ", kMaxRedirects, " redirects"));
}

std::string http_get_text(const HttpRequest& request, uint64_t max_bytes) {
    std::string body;
    bool too_big = false;
    http_get(request, [](const HttpHead&) { return true; }, [&](std::string_view chunk) {
        if (body.size() + chunk.size() > max_bytes) {
            too_big = true;
            return false;
        }
        body.append(chunk);
        return true;
    });
    if (too_big) throw SystemError(cat("GET ", request.url, ": answer over ", max_bytes, " bytes"));
    return body;
}

}  // namespace strata
