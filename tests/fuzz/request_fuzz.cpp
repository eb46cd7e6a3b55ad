// libFuzzer target for the server's request parsing: any bytes given as the body of either
// generation endpoint either parse or raise ApiError 400 — never another exception, a crash or
// a sanitizer report. (Only a parsed request can reach the engine.)
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/server/api_error.h"
#include "engine/server/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace strata::server;
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    for (Endpoint endpoint : {Endpoint::Chat, Endpoint::Completion}) {
        try {
            parse_request(endpoint, body, strata::SamplerParams{});
        } catch (const ApiError& e) {
            if (e.status() != 400) std::abort();
        }
    }
    return 0;
}
