// A tiny synthetic Gemma 3 for the chat tests, written in its own file because synth_vocab.h
// and tokenizer/vocab.h both declare a TokenType and cannot share a translation unit.
#pragma once

#include <string>

namespace strata::testing {

void write_tiny_gemma3(const std::string& path);

}  // namespace strata::testing
