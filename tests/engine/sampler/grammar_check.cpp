// grammar_check: Strata's GBNF parser and matcher for grammar_oracle.py. Reads a JSON list of
// {"grammar": GBNF | "schema": JSON schema | "json_object": true, "inputs": [strings]} on stdin
// and writes, per case, {"accepted": [bool per input]} (the whole input fed and the grammar
// complete) or {"error": message}.
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/sampler/grammar_matcher.h"
#include "engine/sampler/json_schema_grammar.h"
#include "engine/tokenizer/utf8.h"

int main() {
    using json = nlohmann::ordered_json;  // schema properties keep their order
    const std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    json out = json::array();
    for (const json& c : json::parse(input)) {
        try {
            std::string text;
            if (c.contains("grammar")) text = c["grammar"].get<std::string>();
            else if (c.contains("schema")) text = strata::json_schema_to_gbnf(c["schema"].dump());
            else text = strata::json_object_gbnf();
            const auto grammar = std::make_shared<const strata::Grammar>(strata::parse_gbnf(text));
            json accepted = json::array();
            for (const json& s : c["inputs"]) {
                strata::GrammarMatcher m(grammar);
                const std::string bytes = s.get<std::string>();
                bool ok = true;
                for (size_t i = 0; ok && i < bytes.size();) {
                    const size_t n = strata::utf8_char_length(bytes, i);
                    ok = n > 0 && m.accept(strata::utf8_decode(bytes, i, n));
                    i += n == 0 ? 1 : n;
                }
                accepted.push_back(ok && m.is_complete());
            }
            out.push_back({{"accepted", accepted}});
        } catch (const strata::Error& e) {
            out.push_back({{"error", e.what()}});
        }
    }
    std::cout << out.dump() << "\n";
    return 0;
}
