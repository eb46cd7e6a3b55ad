// A parsed Jinja template, rendered against a context of variables. This is the interpreter's
// public face: engine/chat uses it to render a GGUF's tokenizer.chat_template the way Hugging
// Face's apply_chat_template does (jinja2 with trim_blocks and lstrip_blocks, loop controls,
// raise_exception, strftime_now, tojson with ensure_ascii=False).
// Hostile templates end in a TemplateError, never a crash: nesting, steps, call depth and
// output size are bounded. A Template is immutable after construction; render() is const and
// may run on several threads at once.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/jinja/jinja_ast.h"
#include "engine/chat/jinja/jinja_lexer.h"
#include "engine/chat/jinja/jinja_parser.h"
#include "engine/chat/jinja/jinja_value.h"

namespace strata::jinja {

struct RenderLimits {
    size_t max_output_bytes = size_t{4} << 20;  // also bounds any one string or list built
    uint64_t max_steps = 20'000'000;             // statements, expressions and loop items
    int max_call_depth = 50;                     // macro calls inside one another
    std::optional<std::time_t> now;              // strftime_now's clock (tests fix it)
};

class Template {
public:
    // Parses `source`; throws TemplateError with the line and column of a syntax error.
    explicit Template(std::string source, const LexOptions& lex = {}, const ParseLimits& parse = {});

    // Renders with `context` as the global variables. Throws TemplateError (an undefined
    // value used, a type error, raise_exception, a limit reached) naming where it happened.
    std::string render(const Object& context, const RenderLimits& limits = {}) const;

    const std::string& source() const { return source_; }

private:
    std::string source_;
    Body body_;
};

}  // namespace strata::jinja
