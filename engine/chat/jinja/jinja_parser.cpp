// Jinja parser (jinja_parser.h): recursive descent over the token list.
#include "engine/chat/jinja/jinja_parser.h"

#include <array>
#include <vector>

namespace strata::jinja {
namespace {

ExprPtr make(Expr::Kind kind, size_t pos, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    e->name = std::move(name);
    return e;
}

ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, size_t pos) {
    ExprPtr e = make(Expr::Kind::Binary, pos, std::move(op));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
}

class Parser {
public:
    Parser(std::string_view src, std::vector<Token> tokens, const ParseLimits& limits)
        : src_(src), toks_(std::move(tokens)), limits_(limits) {}

    Body parse_all() {
        std::string end;
        Body body = parse_body({}, end);
        return body;
    }

private:
    // --- token helpers ---
    const Token& cur() const { return toks_[i_]; }
    const Token& next() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }
    bool is_op(std::string_view op) const { return cur().kind == TokenKind::Op && cur().text == op; }
    bool is_name(std::string_view n) const { return cur().kind == TokenKind::Name && cur().text == n; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        ++i_;
        return true;
    }
    bool skip_name(std::string_view n) {
        if (!is_name(n)) return false;
        ++i_;
        return true;
    }
    [[noreturn]] void fail(const std::string& what, size_t pos) const {
        throw TemplateError(cat("template syntax error at ", source_position(src_, pos), ": ", what));
    }
    std::string describe(const Token& t) const {
        switch (t.kind) {
            case TokenKind::End: return "end of template";
            case TokenKind::BlockEnd: return "'%}'";
            case TokenKind::VarEnd: return "'}}'";
            case TokenKind::Text: return "text";
            default: return "'" + t.text + "'";
        }
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail(cat("expected '", op, "', got ", describe(cur())), cur().pos);
    }
    std::string expect_name() {
        if (cur().kind != TokenKind::Name) fail(cat("expected a name, got ", describe(cur())), cur().pos);
        return next().text;
    }
    void expect_block_end() {
        if (cur().kind != TokenKind::BlockEnd) fail(cat("expected '%}', got ", describe(cur())), cur().pos);
        ++i_;
    }
    struct Depth {
        Parser& p;
        Depth(Parser& parser, size_t pos) : p(parser) {
            if (++p.depth_ > p.limits_.max_nesting) p.fail(cat("nesting deeper than ", p.limits_.max_nesting), pos);
        }
        ~Depth() { --p.depth_; }
    };

    // Sets e's height from its arguments; a chain taller than the nesting limit is refused
    // (a left-deep `a+a+a...` would otherwise recurse once per operator when evaluated).
    ExprPtr grown(ExprPtr e) {
        for (const ExprPtr& a : e->args) {
            if (a && a->height + 1 > e->height) e->height = a->height + 1;
        }
        for (const auto& kv : e->kwargs) {
            if (kv.second->height + 1 > e->height) e->height = kv.second->height + 1;
        }
        if (e->height > limits_.max_nesting) fail(cat("expression nested deeper than ", limits_.max_nesting), e->pos);
        return e;
    }

    // --- statements ---
    Body parse_body(const std::vector<std::string_view>& ends, std::string& found_end);
    NodePtr parse_statement(size_t pos);
    NodePtr parse_if(size_t pos);
    NodePtr parse_for(size_t pos);
    NodePtr parse_set(size_t pos);
    NodePtr parse_macro(size_t pos);

    // --- expressions ---
    ExprPtr parse_expression();
    ExprPtr parse_or();
    ExprPtr parse_and();
    ExprPtr parse_not();
    ExprPtr parse_compare();
    ExprPtr parse_math1();
    ExprPtr parse_concat();
    ExprPtr parse_math2();
    ExprPtr parse_pow();
    ExprPtr parse_unary(bool with_filters = true);
    ExprPtr parse_primary();
    ExprPtr parse_postfix(ExprPtr e);
    ExprPtr parse_filters_and_tests(ExprPtr e);
    ExprPtr parse_subscript(ExprPtr e);
    void parse_call_args(Expr& call);
    ExprPtr parse_sequence(Expr::Kind kind, std::string_view close, size_t pos);

    std::string_view src_;
    std::vector<Token> toks_;
    ParseLimits limits_;
    size_t i_ = 0;
    int depth_ = 0;
};

Body Parser::parse_body(const std::vector<std::string_view>& ends, std::string& found_end) {
    Body body;
    for (;;) {
        const Token& t = cur();
        if (t.kind == TokenKind::End) {
            if (!ends.empty()) fail(cat("missing '{% ", ends.back(), " %}'"), t.pos);
            return body;
        }
        if (t.kind == TokenKind::Text) {
            auto n = std::make_unique<Node>();
            n->kind = Node::Kind::Text;
            n->text = next().text;
            body.push_back(std::move(n));
        } else if (t.kind == TokenKind::VarBegin) {
            const size_t pos = next().pos;
            auto n = std::make_unique<Node>();
            n->kind = Node::Kind::Output;
            n->pos = pos;
            n->expr = parse_expression();
            if (cur().kind != TokenKind::VarEnd) fail(cat("expected '}}', got ", describe(cur())), cur().pos);
            ++i_;
            body.push_back(std::move(n));
        } else if (t.kind == TokenKind::BlockBegin) {
            const size_t pos = next().pos;
            if (cur().kind == TokenKind::Name) {
                for (std::string_view end : ends) {
                    if (cur().text == end) {
                        found_end = next().text;
                        return body;
                    }
                }
            }
            if (NodePtr n = parse_statement(pos)) body.push_back(std::move(n));
        } else {
            fail(cat("unexpected ", describe(t)), t.pos);
        }
    }
}

NodePtr Parser::parse_statement(size_t pos) {
    Depth depth(*this, pos);
    const std::string word = expect_name();
    auto simple = [&](Node::Kind kind) {
        expect_block_end();
        auto n = std::make_unique<Node>();
        n->kind = kind;
        n->pos = pos;
        return n;
    };
    if (word == "if") return parse_if(pos);
    if (word == "for") return parse_for(pos);
    if (word == "set") return parse_set(pos);
    if (word == "macro") return parse_macro(pos);
    if (word == "break") return simple(Node::Kind::Break);
    if (word == "continue") return simple(Node::Kind::Continue);
    if (word == "generation") {
        // Hugging Face's AssistantTracker tag: renders its body unchanged.
        expect_block_end();
        std::string end;
        Body body = parse_body({"endgeneration"}, end);
        expect_block_end();
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::If;
        n->pos = pos;
        ExprPtr yes = make(Expr::Kind::Literal, pos);
        yes->value = Value(true);
        n->branches.emplace_back(std::move(yes), std::move(body));
        return n;
    }
    fail(cat("unknown statement '", word, "' (supported: if, for, set, macro, break, continue, generation)"), pos);
}

NodePtr Parser::parse_if(size_t pos) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::If;
    n->pos = pos;
    ExprPtr cond = parse_expression();
    for (;;) {
        expect_block_end();
        std::string end;
        Body body = parse_body({"elif", "else", "endif"}, end);
        n->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "elif") {
            cond = parse_expression();
            continue;
        }
        if (end == "else") {
            expect_block_end();
            n->else_body = parse_body({"endif"}, end);
        }
        expect_block_end();
        return n;
    }
}

NodePtr Parser::parse_for(size_t pos) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::For;
    n->pos = pos;
    const bool paren = skip_op("(");
    do {
        n->targets.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    if (!skip_name("in")) fail(cat("expected 'in' in the for loop, got ", describe(cur())), cur().pos);
    n->expr = parse_or();
    if (skip_name("if")) n->filter = parse_expression();
    if (skip_name("recursive")) fail("recursive for loops are not supported", pos);
    expect_block_end();
    std::string end;
    n->body = parse_body({"else", "endfor"}, end);
    if (end == "else") {
        expect_block_end();
        n->else_body = parse_body({"endfor"}, end);
    }
    expect_block_end();
    return n;
}

NodePtr Parser::parse_set(size_t pos) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::Set;
    n->pos = pos;
    n->targets.push_back(expect_name());
    if (skip_op(".")) {
        n->attr = expect_name();
    } else {
        while (skip_op(",")) n->targets.push_back(expect_name());
    }
    if (cur().kind == TokenKind::BlockEnd && n->attr.empty() && n->targets.size() == 1) {
        ++i_;
        n->kind = Node::Kind::SetBlock;
        std::string end;
        n->body = parse_body({"endset"}, end);
        expect_block_end();
        return n;
    }
    expect_op("=");
    n->expr = parse_expression();
    if (is_op(",")) {
        ExprPtr tuple = make(Expr::Kind::Tuple, cur().pos);
        tuple->args.push_back(std::move(n->expr));
        while (skip_op(",")) tuple->args.push_back(parse_expression());
        n->expr = std::move(tuple);
    }
    expect_block_end();
    return n;
}

NodePtr Parser::parse_macro(size_t pos) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::Macro;
    n->pos = pos;
    n->text = expect_name();
    expect_op("(");
    while (!skip_op(")")) {
        if (!n->params.empty()) expect_op(",");
        std::string name = expect_name();
        ExprPtr def;
        if (skip_op("=")) def = parse_expression();
        n->params.emplace_back(std::move(name), std::move(def));
    }
    expect_block_end();
    std::string end;
    n->body = parse_body({"endmacro"}, end);
    expect_block_end();
    return n;
}

ExprPtr Parser::parse_expression() {
    Depth depth(*this, cur().pos);
    ExprPtr e = parse_or();
    while (is_name("if")) {
        const size_t pos = next().pos;
        ExprPtr c = make(Expr::Kind::Cond, pos);
        c->args.push_back(std::move(e));
        c->args.push_back(parse_or());
        c->args.push_back(skip_name("else") ? parse_expression() : nullptr);
        e = grown(std::move(c));
    }
    return e;
}

ExprPtr Parser::parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
        const size_t pos = next().pos;
        e = grown(binary("or", std::move(e), parse_and(), pos));
    }
    return e;
}

ExprPtr Parser::parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
        const size_t pos = next().pos;
        e = grown(binary("and", std::move(e), parse_not(), pos));
    }
    return e;
}

ExprPtr Parser::parse_not() {
    if (is_name("not")) {
        const size_t pos = next().pos;
        Depth depth(*this, pos);
        ExprPtr e = make(Expr::Kind::Unary, pos, "not");
        e->args.push_back(parse_not());
        return grown(std::move(e));
    }
    return parse_compare();
}

ExprPtr Parser::parse_compare() {
    static constexpr std::array<std::string_view, 6> kOps = {"==", "!=", "<", ">", "<=", ">="};
    ExprPtr e = parse_math1();
    for (;;) {
        const size_t pos = cur().pos;
        std::string op;
        for (std::string_view o : kOps) {
            if (is_op(o)) op = o;
        }
        if (!op.empty()) {
            ++i_;
        } else if (skip_name("in")) {
            op = "in";
        } else if (is_name("not") && toks_[i_ + 1].kind == TokenKind::Name && toks_[i_ + 1].text == "in") {
            i_ += 2;
            op = "not in";
        } else {
            return e;
        }
        e = grown(binary(op, std::move(e), parse_math1(), pos));
    }
}

ExprPtr Parser::parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
        const Token& t = next();
        e = grown(binary(t.text, std::move(e), parse_concat(), t.pos));
    }
    return e;
}

ExprPtr Parser::parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
        const size_t pos = next().pos;
        e = grown(binary("~", std::move(e), parse_math2(), pos));
    }
    return e;
}

ExprPtr Parser::parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
        const Token& t = next();
        e = grown(binary(t.text, std::move(e), parse_pow(), t.pos));
    }
    return e;
}

ExprPtr Parser::parse_pow() {
    ExprPtr e = parse_unary();
    while (is_op("**")) {
        const size_t pos = next().pos;
        e = grown(binary("**", std::move(e), parse_unary(), pos));
    }
    return e;
}

// As jinja2: filters bind to the negated value, so `-3|abs` is 3.
ExprPtr Parser::parse_unary(bool with_filters) {
    Depth depth(*this, cur().pos);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
        const Token& t = next();
        e = make(Expr::Kind::Unary, t.pos, t.text);
        e->args.push_back(parse_unary(false));
        e = grown(std::move(e));
    } else {
        e = parse_postfix(parse_primary());
    }
    return with_filters ? parse_filters_and_tests(std::move(e)) : std::move(e);
}

ExprPtr Parser::parse_primary() {
    const Token& t = cur();
    const size_t pos = t.pos;
    if (t.kind == TokenKind::Name) {
        const std::string name = next().text;
        ExprPtr e = make(Expr::Kind::Literal, pos);
        if (name == "true" || name == "True") e->value = Value(true);
        else if (name == "false" || name == "False") e->value = Value(false);
        else if (name == "none" || name == "None") e->value = Value::none();
        else e = make(Expr::Kind::Name, pos, name);
        return e;
    }
    if (t.kind == TokenKind::String) {
        std::string s;
        while (cur().kind == TokenKind::String) s += next().text;
        ExprPtr e = make(Expr::Kind::Literal, pos);
        e->value = Value(std::move(s));
        return e;
    }
    if (t.kind == TokenKind::Int || t.kind == TokenKind::Float) {
        ExprPtr e = make(Expr::Kind::Literal, pos);
        e->value = t.kind == TokenKind::Int ? Value(t.int_value) : Value(t.float_value);
        ++i_;
        return e;
    }
    if (skip_op("(")) {
        if (skip_op(")")) return make(Expr::Kind::Tuple, pos);
        ExprPtr e = parse_expression();
        if (!is_op(",")) {
            expect_op(")");
            return e;
        }
        ExprPtr tuple = make(Expr::Kind::Tuple, pos);
        tuple->args.push_back(std::move(e));
        while (skip_op(",") && !is_op(")")) tuple->args.push_back(parse_expression());
        expect_op(")");
        return grown(std::move(tuple));
    }
    if (skip_op("[")) return parse_sequence(Expr::Kind::List, "]", pos);
    if (skip_op("{")) return parse_sequence(Expr::Kind::Dict, "}", pos);
    fail(cat("expected an expression, got ", describe(t)), pos);
}

// Items up to `close`; a dict's items are key: value pairs. Trailing commas are allowed.
ExprPtr Parser::parse_sequence(Expr::Kind kind, std::string_view close, size_t pos) {
    ExprPtr e = make(kind, pos);
    while (!skip_op(close)) {
        if (!e->args.empty()) {
            expect_op(",");
            if (skip_op(close)) break;
        }
        e->args.push_back(parse_expression());
        if (kind == Expr::Kind::Dict) {
            expect_op(":");
            e->args.push_back(parse_expression());
        }
    }
    return grown(std::move(e));
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
    for (;;) {
        const size_t pos = cur().pos;
        if (skip_op(".")) {
            ExprPtr a = make(Expr::Kind::Attr, pos);
            if (cur().kind == TokenKind::Int) {
                a->kind = Expr::Kind::Index;
                a->args.push_back(std::move(e));
                ExprPtr idx = make(Expr::Kind::Literal, pos);
                idx->value = Value(next().int_value);
                a->args.push_back(std::move(idx));
            } else {
                a->name = expect_name();
                a->args.push_back(std::move(e));
            }
            e = grown(std::move(a));
        } else if (skip_op("[")) {
            e = grown(parse_subscript(std::move(e)));
        } else if (is_op("(")) {
            ++i_;
            ExprPtr call = make(Expr::Kind::Call, pos);
            call->args.push_back(std::move(e));
            parse_call_args(*call);
            e = grown(std::move(call));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_subscript(ExprPtr e) {
    const size_t pos = cur().pos;
    ExprPtr parts[3];
    int n_colons = 0;
    if (!is_op(":")) parts[0] = parse_expression();
    while (n_colons < 2 && skip_op(":")) {
        ++n_colons;
        if (!is_op(":") && !is_op("]")) parts[n_colons] = parse_expression();
    }
    expect_op("]");
    ExprPtr s = make(n_colons == 0 ? Expr::Kind::Index : Expr::Kind::Slice, pos);
    s->args.push_back(std::move(e));
    s->args.push_back(std::move(parts[0]));
    if (n_colons > 0) {
        s->args.push_back(std::move(parts[1]));
        s->args.push_back(std::move(parts[2]));
    }
    return s;
}

void Parser::parse_call_args(Expr& call) {
    while (!skip_op(")")) {
        if (call.args.size() > 1 || !call.kwargs.empty()) {
            expect_op(",");
            if (skip_op(")")) return;
        }
        if (cur().kind == TokenKind::Name && toks_[i_ + 1].kind == TokenKind::Op && toks_[i_ + 1].text == "=") {
            std::string key = next().text;
            ++i_;
            call.kwargs.emplace_back(std::move(key), parse_expression());
        } else {
            if (!call.kwargs.empty()) fail("positional argument after a keyword argument", cur().pos);
            call.args.push_back(parse_expression());
        }
    }
}

ExprPtr Parser::parse_filters_and_tests(ExprPtr e) {
    for (;;) {
        const size_t pos = cur().pos;
        if (skip_op("|")) {
            ExprPtr f = make(Expr::Kind::Filter, pos, expect_name());
            f->args.push_back(std::move(e));
            if (skip_op("(")) parse_call_args(*f);
            e = grown(std::move(f));
        } else if (skip_name("is")) {
            ExprPtr t = make(Expr::Kind::Test, pos);
            t->negated = skip_name("not");
            t->name = expect_name();
            t->args.push_back(std::move(e));
            const Token& a = cur();
            const bool arg_start = a.kind == TokenKind::Name || a.kind == TokenKind::String ||
                                   a.kind == TokenKind::Int || a.kind == TokenKind::Float ||
                                   (a.kind == TokenKind::Op && (a.text == "[" || a.text == "{"));
            if (skip_op("(")) {
                parse_call_args(*t);
            } else if (arg_start && !is_name("else") && !is_name("or") && !is_name("and")) {
                if (is_name("is")) fail("tests cannot be chained with 'is'", a.pos);
                t->args.push_back(parse_postfix(parse_primary()));
            }
            e = grown(std::move(t));
        } else {
            return e;
        }
    }
}

}  // namespace

Body parse_template(std::string_view source, const LexOptions& lex_options, const ParseLimits& limits) {
    return Parser(source, lex(source, lex_options), limits).parse_all();
}

}  // namespace strata::jinja
