// HTTP(S) GET for the model hub: one request, following redirects (a hub answers a file's URL
// with a redirect to its storage), with a bearer token sent only to the host it was given for.
// HTTPS works where cpp-httplib was built with OpenSSL (Debian's is). Errors are exceptions:
// SystemError for the network, HttpStatusError for an answer that is not 2xx.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace strata {

class HttpStatusError : public SystemError {
  public:
    HttpStatusError(const std::string& what, int status) : SystemError(what), status_(status) {}
    int status() const { return status_; }

  private:
    int status_;
};

struct HttpRequest {
    std::string url;           // http://host[:port]/path or https://...
    std::string range;         // "bytes=N-" or empty
    std::string bearer_token;  // sent to the first host only, never to a redirect's host
    int timeout_s = 60;        // connect and read timeout
};

// What the final (non-redirect) answer said before its body.
struct HttpHead {
    int status = 0;
    std::string content_range;     // "bytes START-END/TOTAL" of a 206
    int64_t content_length = -1;  // -1: not given
    std::string final_url;
};

// Called with each chunk of the body of a 2xx answer; return false to stop.
using HttpBodyFn = std::function<bool(std::string_view chunk)>;
// Called with the head of the final answer before its body; return false to skip the body.
using HttpHeadFn = std::function<bool(const HttpHead& head)>;

// Runs the GET. Throws ArgumentError for a URL that is not http(s), SystemError when the
// connection fails or breaks, HttpStatusError for a final status that is neither 2xx nor 416
// (416 reaches on_head so that a resume can tell "already complete").
HttpHead http_get(const HttpRequest& request, const HttpHeadFn& on_head, const HttpBodyFn& on_body);

// The whole body of a small answer (at most `max_bytes`, else SystemError).
std::string http_get_text(const HttpRequest& request, uint64_t max_bytes);

// "https://host:port" and "/path?query" of a URL; throws ArgumentError naming `url`.
std::pair<std::string, std::string> split_url(std::string_view url);

// Percent-encodes one path segment (keeps A-Z a-z 0-9 - . _ ~).
std::string url_encode_segment(std::string_view segment);

}  // namespace strata
