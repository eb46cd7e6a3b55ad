#!/usr/bin/env python3
"""Writes corpus.txt, the tokenizer test corpus: hand-written snippets (prose, code, many
scripts, emoji, whitespace, numbers, text that spells special tokens) followed by deterministic
mixtures of them. All text here was written for Strata; nothing is taken from a book.

Usage: python3 make_corpus.py [OUT]   (default: corpus.txt beside this script)
"""
import os
import random
import sys

PROSE = """\
The quick brown fox jumps over the lazy dog.
A tokenizer turns text into numbers, and a detokenizer turns them back.
She said, "It's not what you think," and walked away.
We'll meet at the station at half past nine; don't be late.
They've been working on the engine since Monday, and it's finally fast.
I'd rather read the manual than guess what the flags do.
The weather report promised sunshine, but the afternoon brought rain.
Each layer reads the hidden state, adds its correction, and passes it on.
Memory is cheap until you need a lot of it at once.
The kettle whistled while the cat pretended not to notice.
Good tests fail loudly when something breaks, and stay quiet otherwise.
Please send the report by Friday; the review is on Monday morning.
There is no such thing as a small change to a file format.
He counted the stars twice and got a different number each time.
The library closes at six o'clock, except on holidays.
A map is not the territory, but it helps to have one.
Why does the build take so long? Because it compiles everything twice.
Wait... did you hear that? Something moved behind the door!
It was the best of plans; it was the worst of schedules.
Dr. Smith arrived at 10:45 a.m. with Mr. Jones and Mrs. O'Neil.
The U.S.A., the U.K., and the E.U. signed the agreement.
Caching the answer is easy; knowing when it is stale is hard.
The river runs north for three miles before it turns toward the sea.
Numbers like 3.14, 2.718 and 1.414 show up everywhere in science.
Our garden grows tomatoes, beans, basil, and far too many weeds.
The old lighthouse keeper wrote a letter every evening.
You can't always get what you want, but you can measure it.
Rain, wind, snow, and sun: the mountain saw them all in one day.
If it ain't broke, don't fix it -- but do write a test for it.
The committee's decision surprised everyone, including the committee.
Bring a pencil, an eraser, and a sense of humour.
Trains leave every fifteen minutes from platform 9.
The cake recipe calls for two eggs, a cup of flour, and patience.
Somewhere a dog barked, and then, as if answering, another one did too.
State machines are simple until someone adds a tenth state.
The server answered with a polite "404 Not Found".
Her notebook was full of arrows, circles, and question marks.
Let's not optimise before we've measured anything.
Tomorrow's forecast: cloudy, with a chance of meatballs.
A well-named function needs no comment; a badly named one needs an apology.
THE SIGN SAID "NO PARKING" IN LETTERS A FOOT TALL.
camelCase, snake_case, kebab-case and SCREAMING_CASE walked into a bar.
e-mail, co-operate, re-enter, self-evident, mother-in-law
Hmm... well, um, I guess so?!
The end.
"""

CODE = r"""#include <vector>
#include <string>
int main(int argc, char** argv) {
    std::vector<int> ids = tokenizer.encode("hello", /*add_special=*/true);
    for (size_t i = 0; i < ids.size(); ++i) { printf("%d\n", ids[i]); }
    return argc > 1 ? 0 : 1;
}
template <typename T> T clamp(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }
auto lambda = [&](const std::string& s) -> bool { return !s.empty(); };
static_assert(sizeof(block_q4_K) == 144, "wrong q4_K block size");
#define STRATA_CHECK(x) do { if (!(x)) throw std::runtime_error(#x); } while (0)
namespace strata { class Vocab; }  // forward declaration
x += y * z - (a / b) % c; p->next = nullptr; q &= ~mask; r <<= 3;
if (a == b && c != d || !e) { return; } else if (f >= g) { g++; }
def fibonacci(n: int) -> int:
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)
class Point:
    def __init__(self, x=0.0, y=0.0):
        self.x, self.y = x, y
    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r})"
for i, line in enumerate(open("corpus.txt", encoding="utf-8")):
    print(f"{i:04d}: {line.rstrip()}")
squares = [x ** 2 for x in range(10) if x % 2 == 0]
result = {k: v for k, v in zip("abc", [1, 2, 3])}
lambda x: x if x else None
import numpy as np; a = np.zeros((3, 4), dtype=np.float32)
{"name": "strata", "version": "0.1.0", "tags": ["llm", "gguf", "cpu"]}
{"ids": [2, 9259, 1902], "text": "Hello world", "ok": true, "score": -1.5e-3}
{
  "model": {"type": "BPE", "dropout": null, "byte_fallback": true},
  "added_tokens": [{"id": 0, "content": "<pad>", "special": true}]
}
[1, 2, 3, {"nested": {"deeper": [null, false, "\u00e9"]}}]
SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;
$ cmake -S . -B build -G Ninja && cmake --build build -j2
git commit -m "Fix off-by-one in the merge loop"
echo $HOME; ls -la /usr/local/bin | grep -v '^d' > out.txt 2>&1
<div class="note"><p>Hello &amp; welcome</p></div>
<a href="https://example.com/path?query=1&lang=en#top">link</a>
# Heading\n## Subheading\n- item one\n- item two
**bold**, *italic*, `code`, [link](http://example.org), ![img](a.png)
fn main() { let v: Vec<u32> = (0..10).collect(); println!("{:?}", v); }
func add(a, b int) int { return a + b }
const x = await fetch(`/api/v1/items/${id}`).then(r => r.json());
std::unordered_map<std::string, int32_t> token_to_id; token_to_id.reserve(262144);
0x7f454c46 0xDEADBEEF 0b101010 0o755 1e-9 6.02214076e23 -0.0 +inf NaN
a[i][j] = b[j][i]; // transpose
/* block comment */ int /* inline */ x = 1;
"""

WORLD = """\
我们今天去公园散步，天气非常好。
机器学习模型需要大量的数据来训练。
这个分词器把文本变成数字。
北京、上海、广州和深圳都是大城市。
他说：“明天见！”然后就走了。
请在星期五之前把报告发给我。
春眠不觉晓，处处闻啼鸟。
今日はとても良い天気ですね。
日本語の文章には漢字、ひらがな、カタカナが混ざっています。
東京駅で友達と待ち合わせをしました。
トークナイザーはテキストを数字の列に変えます。
ラーメンとおにぎりを注文した。
안녕하세요, 만나서 반갑습니다.
오늘은 날씨가 정말 좋네요.
한국어는 한글로 씁니다.
서울에서 부산까지 기차로 세 시간 걸려요.
مرحبا بكم في عالم الذكاء الاصطناعي.
اللغة العربية تكتب من اليمين إلى اليسار.
القاهرة هي عاصمة مصر، وهي مدينة كبيرة جدا.
كيف حالك اليوم؟ أنا بخير، شكرا.
الأرقام العربية: ٠ ١ ٢ ٣ ٤ ٥ ٦ ٧ ٨ ٩
שלום עולם, מה שלומך?
Привет, мир! Как дела?
Москва — столица России, а Киев — столица Украины.
Γεια σου κόσμε. Η γλώσσα είναι όμορφη.
नमस्ते दुनिया, आप कैसे हैं?
สวัสดีครับ ยินดีที่ได้รู้จัก
Xin chào thế giới, hôm nay trời đẹp quá.
Ça va? Très bien, merci. L'été dernier, nous sommes allés à la mer.
Größe, Straße, Übermut, Äpfel und Öl: schöne deutsche Wörter.
El niño comió piña y jalapeños en la mañana. ¿Quién sabe? ¡Olé!
Türkçe: çiçek, ağaç, göğüs, ışık, şeker.
Polski: zażółć gęślą jaźń.
Čeština: příliš žluťoučký kůň úpěl ďábelské ódy.
Íslenska: Þetta er ð og þ og æ.
ქართული ენა ძალიან ლამაზია.
Հայերեն տառեր
ᚠᚢᚦᚨᚱᚲ runes and ᚷᚹ
Ελληνικά: αβγδεζηθικλμνξοπρστυφχψω ΑΒΓΔ
Math: ∀x ∈ ℝ, x² ≥ 0; ∑ᵢ aᵢ = ∫ f(x) dx ≈ π/4 ± ε
Arrows and symbols: → ← ↑ ↓ ⇒ ⇔ ∞ ≠ ≤ ≥ © ® ™ § ¶ † ‡ • … ‰ € £ ¥ ₹ ₿
Full-width: ＡＢＣ１２３！？ and half-width ｶﾀｶﾅ
Combining: e\u0301 a\u0308 n\u0303 (decomposed) vs é ä ñ (composed)
Zero width: a\u200bb\u200cc\u200dd and soft\u00adhyphen
Ligatures: ﬁ ﬂ ﬀ ﬃ and Roman numerals Ⅻ ⅷ
Mathematical bold: 𝐀𝐁𝐂 𝕏𝕐ℤ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢
Rare CJK: 𠀀𠀁𪚥 𩸽 (extension B)
"""

EMOJI = """\
I love pizza 🍕 and sushi 🍣!
😀😃😄😁😆😅😂🤣
Family: 👨‍👩‍👧‍👦 and couple: 👩‍❤️‍👨
Pride flag 🏳️‍🌈 and pirate flag 🏴‍☠️
Skin tones: 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿
Developer: 👩🏽‍💻 scientist: 🧑‍🔬 astronaut: 👨🏿‍🚀
Flags: 🇯🇵 🇺🇸 🇫🇷 🇩🇪 🇧🇷 🇮🇳
Keycaps: 1️⃣ 2️⃣ #️⃣ *️⃣
Hearts ❤️ 🧡 💛 💚 💙 💜 🖤 🤍
Weather ☀️🌤️⛅🌧️⛈️🌩️❄️
The rocket 🚀 launched at T-0 🔥🔥🔥
✅ done ❌ failed ⚠️ warning ℹ️ info
"""

SPECIAL = """\
<start_of_turn>user
What is the capital of France?<end_of_turn>
<start_of_turn>model
The capital of France is Paris.<end_of_turn>
<bos><start_of_turn>user
Hello!<end_of_turn>
<start_of_turn>model
<eos>
text before <eos> text after
<pad><pad><pad>
<unk> <mask> [multimodal] <unused0> <unused99> <unused6241>
<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
Hi there<|im_end|>
<|im_start|>assistant
<|endoftext|>
<|begin_of_text|><|start_header_id|>user<|end_header_id|>
Tell me a joke.<|eot_id|>
<0x41><0x42> are byte tokens written as text
<start_of_tur incomplete, <<eos>> doubled, </eos> closing, <EOS> upper
<end_of_turn><end_of_turn><start_of_turn>
  <start_of_turn>  spaced  <end_of_turn>  
"""

NUMBERS = """\
1234567890
3.14159265358979323846
1,000,000 and 1.000.000 and 1 000 000
2024-05-17T13:45:30Z
+1 (555) 123-4567
Version 1.2.3-beta.4+build.56
IPv4 192.168.0.1, IPv6 fe80::1ff:fe23:4567:890a
Total: $1,234.56 (USD) or €1.234,56
12345678901234567890123456789012345678901234567890
0 00 000 0000 00000 000000
1st 2nd 3rd 4th 21st 22nd 101st
-42 +42 4e10 0.5% 99.9%
"""

WHITESPACE = [
    " one leading space",
    "  two leading spaces",
    "   three leading spaces",
    "    four leading spaces (code indent)",
    "        eight leading spaces",
    "\ttab indented",
    "\t\ttwo tabs",
    "\t\t\t\tfour tabs",
    "trailing spaces   ",
    "trailing tab\t",
    "word  two  spaces  between",
    "word   three   spaces",
    "a \t b \t c",
    "\t \t \t mixed",
    "col1\tcol2\tcol3\tcol4",
    " ",
    "  ",
    "\t",
    "x" + " " * 31 + "y",
    "x" + " " * 32 + "y",
    "x" + " " * 33 + "y",
    "x" + " " * 40 + "y",
    "x" + " " * 64 + "y",
    " " * 100,
    "\t" * 40 + "deep",
    "end with CR\r",
    "CR\rin the middle",
    "",
    "",
    "form\x0cfeed and vertical\x0btab",
    "non-breaking\u00a0space and ideographic\u3000space and thin\u2009space",
    "line\u2028separator and paragraph\u2029separator",
]

SEPARATORS = [" ", " ", " ", "  ", "\t", "   ", "", ", ", " - ", "    ", "\t\t", " \t "]


def lines_of(block):
    return block.split("\n")[:-1] if block.endswith("\n") else block.split("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus.txt")
    groups = {
        "prose": lines_of(PROSE),
        "code": lines_of(CODE),
        "world": lines_of(WORLD),
        "emoji": lines_of(EMOJI),
        "special": lines_of(SPECIAL),
        "numbers": lines_of(NUMBERS),
        "whitespace": WHITESPACE,
    }
    lines = []
    for name in groups:
        lines.extend(groups[name])

    rng = random.Random(20240517)
    names = list(groups)
    pool = [l for g in groups.values() for l in g if l.strip()]
    # Mixtures: two to four snippets from random groups, random separators and indents.
    while len(lines) < 1100:
        parts = [rng.choice(groups[rng.choice(names)]) for _ in range(rng.randint(2, 4))]
        line = parts[0]
        for p in parts[1:]:
            line += rng.choice(SEPARATORS) + p
        if rng.random() < 0.2:
            line = " " * rng.randint(1, 6) + line
        lines.append(line)
    # A few long lines (a paragraph each).
    for _ in range(8):
        lines.append(" ".join(rng.choice(pool) for _ in range(40)))

    for l in lines:
        if "\n" in l:
            raise SystemExit(f"corpus line contains a newline: {l!r}")
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} lines to {out}")


if __name__ == "__main__":
    main()
