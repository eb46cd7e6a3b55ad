// The chat page GET / serves: one static HTML document with its CSS and JavaScript inline (no
// external assets), compiled into the binary. It streams answers from /v1/chat/completions,
// keeps the conversation in the page, and has a stop button and an optional API key field.
#pragma once

#include <string_view>

namespace strata::server {

std::string_view chat_page_html();

}  // namespace strata::server
