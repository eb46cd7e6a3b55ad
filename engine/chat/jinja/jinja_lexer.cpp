// Jinja lexer (jinja_lexer.h).
#include "engine/chat/jinja/jinja_lexer.h"

#include <array>
#include <cctype>

#include "engine/chat/jinja/jinja_value.h"
#include "engine/tokenizer/utf8.h"

namespace strata::jinja {

std::string source_position(std::string_view source, size_t pos) {
    size_t line = 1;
    size_t col = 1;
    for (size_t i = 0; i < pos && i < source.size(); ++i) {
        if (source[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return cat("line ", line, ", column ", col);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

constexpr std::array<std::string_view, 6> kLongOps = {"//", "**", "==", "!=", "<=", ">="};
constexpr std::string_view kShortOps = "+-*/%~<>()[]{},.:|=";

class Lexer {
public:
    Lexer(std::string_view src, const LexOptions& o) : src_(src), opt_(o) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            const size_t start = find_tag(pos_);
            std::string text(src_.substr(pos_, start - pos_));
            if (start == src_.size()) {
                emit_text(std::move(text), pos_);
                pos_ = start;
                break;
            }
            const char kind = src_[start + 1];
            const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
            strip_before(text, kind, sign);
            emit_text(std::move(text), pos_);
            pos_ = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
            if (kind == '#') {
                comment(start);
            } else {
                tag(kind, start);
            }
        }
        out_.push_back(Token{TokenKind::End, "", 0, 0, src_.size()});
        return std::move(out_);
    }

private:
    size_t find_tag(size_t from) const {
        for (size_t i = from; i + 1 < src_.size(); ++i) {
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return src_.size();
    }

    void fail(const std::string& what, size_t at) const {
        throw TemplateError(cat("template syntax error at ", source_position(src_, at), ": ", what));
    }

    // Whitespace control on the text before a tag: '-' strips it all, lstrip_blocks strips the
    // blanks after the last newline (or the start of a line) before a block or comment tag.
    void strip_before(std::string& text, char kind, char sign) const {
        if (sign == '-') {
            size_t n = text.size();
            while (n > 0 && is_space(text[n - 1])) --n;
            text.resize(n);
        } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && l_pos < text.size()) {
                bool blank = true;
                for (size_t i = l_pos; i < text.size(); ++i) blank = blank && is_space(text[i]);
                if (blank) text.resize(l_pos);
            }
        }
    }

    void emit_text(std::string text, size_t at) {
        line_starting_ = false;
        if (!text.empty()) out_.push_back(Token{TokenKind::Text, std::move(text), 0, 0, at});
    }

    // After a closing tag: '-' eats all whitespace, trim_blocks (block/comment) one newline.
    void after_close(bool minus, bool plus, bool block) {
        const size_t before = pos_;
        if (minus) {
            while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
        } else if (block && !plus && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
        line_starting_ = pos_ > before && src_[pos_ - 1] == '\n';
    }

    void comment(size_t start) {
        const size_t end = src_.find("#}", pos_);
        if (end == std::string_view::npos) fail("unclosed comment", start);
        const char last = end > pos_ ? src_[end - 1] : '\0';
        pos_ = end + 2;
        after_close(last == '-', last == '+', true);
    }

    void tag(char kind, size_t start) {
        const bool block = kind == '%';
        out_.push_back(Token{block ? TokenKind::BlockBegin : TokenKind::VarBegin, "", 0, 0, start});
        int depth = 0;
        for (;;) {
            while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
            if (pos_ >= src_.size()) fail(block ? "unclosed '{%'" : "unclosed '{{'", start);
            if (depth == 0 && close_tag(block)) return;
            const char c = src_[pos_];
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                name();
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                number();
            } else if (c == '\'' || c == '"') {
                string(c);
            } else {
                depth += op();
                if (depth < 0) depth = 0;
            }
        }
    }

    bool close_tag(bool block) {
        const std::string_view rest = src_.substr(pos_);
        const std::string_view close = block ? "%}" : "}}";
        bool minus = false;
        bool plus = false;
        if ((rest.starts_with('-') || rest.starts_with('+')) && rest.substr(1).starts_with(close)) {
            minus = rest[0] == '-';
            plus = rest[0] == '+';
            ++pos_;
        } else if (!rest.starts_with(close)) {
            return false;
        }
        out_.push_back(Token{block ? TokenKind::BlockEnd : TokenKind::VarEnd, "", 0, 0, pos_});
        pos_ += 2;
        after_close(minus, plus, block);
        return true;
    }

    void name() {
        const size_t start = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        out_.push_back(Token{TokenKind::Name, std::string(src_.substr(start, pos_ - start)), 0, 0, start});
    }

    void number() {
        const size_t start = pos_;
        bool is_float = false;
        auto digits = [&] { while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_; };
        digits();
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
            is_float = true;
            ++pos_;
            digits();
        }
        if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            size_t p = pos_ + 1;
            if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
            if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
                is_float = true;
                pos_ = p;
                digits();
            }
        }
        std::string text;
        for (const char c : src_.substr(start, pos_ - start)) {
            if (c != '_') text += c;
        }
        Token t{is_float ? TokenKind::Float : TokenKind::Int, text, 0, 0, start};
        try {
            if (is_float) t.float_value = std::stod(text);
            else t.int_value = std::stoll(text);
        } catch (const std::exception&) {
            fail(cat("number '", text, "' out of range"), start);
        }
        out_.push_back(std::move(t));
    }

    void string(char quote);
    int op();

    std::string_view src_;
    LexOptions opt_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<Token> out_;
};

// Python string escapes: \n \t \r \\ \' \" \xHH \uHHHH \UHHHHHHHH; others stay as written.
void Lexer::string(char quote) {
    const size_t start = pos_++;
    std::string value;
    for (;;) {
        if (pos_ >= src_.size()) fail("unclosed string", start);
        const char c = src_[pos_++];
        if (c == quote) break;
        if (c != '\\' || pos_ >= src_.size()) {
            value += c;
            continue;
        }
        const char e = src_[pos_++];
        const int hex_len = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (hex_len > 0) {
            if (pos_ + static_cast<size_t>(hex_len) > src_.size()) fail("truncated \\x escape", pos_);
            uint32_t cp = 0;
            for (int i = 0; i < hex_len; ++i) {
                const char h = src_[pos_++];
                if (!std::isxdigit(static_cast<unsigned char>(h))) fail("bad hex digit in escape", pos_ - 1);
                cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
            }
            if (cp > 0x10FFFF) fail("escape beyond U+10FFFF", pos_);
            utf8_append(value, static_cast<char32_t>(cp));
            continue;
        }
        switch (e) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            case '0': value += '\0'; break;
            case '\\': value += '\\'; break;
            case '\'': value += '\''; break;
            case '"': value += '"'; break;
            case '\n': break;
            default: value += '\\'; value += e;
        }
    }
    out_.push_back(Token{TokenKind::String, std::move(value), 0, 0, start});
}

// Returns +1 for an opening bracket, -1 for a closing one (tags do not close inside brackets).
int Lexer::op() {
    const std::string_view rest = src_.substr(pos_);
    for (const std::string_view op : kLongOps) {
        if (rest.starts_with(op)) {
            out_.push_back(Token{TokenKind::Op, std::string(op), 0, 0, pos_});
            pos_ += op.size();
            return 0;
        }
    }
    const char c = rest[0];
    if (kShortOps.find(c) == std::string_view::npos) fail(cat("unexpected character '", c, "'"), pos_);
    out_.push_back(Token{TokenKind::Op, std::string(1, c), 0, 0, pos_});
    ++pos_;
    return (c == '(' || c == '[' || c == '{') ? 1 : (c == ')' || c == ']' || c == '}') ? -1 : 0;
}

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
    return Lexer(source, options).run();
}

}  // namespace strata::jinja
