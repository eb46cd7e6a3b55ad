#!/usr/bin/env python3
"""Checks that Strata's source tree reads as a stack: every #include "folder/file" and every
target_link_libraries between Strata's libraries points down the stack, never up or sideways.
The layers, from the ground up (docs/ARCHITECTURE.md, "Layers"):

  0 quant            block formats and the scalar reference
  1 engine/core      tensors, errors, the Backend interface and its registry, files
  2 engine/gguf      GGUF files
  3 kernels_cpu, kernels_cuda   the backends' kernels (never each other)
  4 backends         the built-in backend list and the fake device
  5 engine/model, engine/tokenizer, engine/sampler, offload, predictor
  6 engine/synth     synthetic models (of the model layer's shapes)
  7 engine/runtime   placement, executor, sessions: a model running on backends
  8 engine/chat      chat templates, conversations on a session
  9 engine/server    the HTTP server
 10 tools            the strata CLI

A folder may include its own files and anything on a lower layer; folders on one layer do
not include each other. tests/ may include anything. Prints each violation with its line and
exits 1; exits 0 when the tree is clean.

usage: scripts/check_layers.py [REPO_ROOT]  |  scripts/check_layers.py --self-test"""
import os
import re
import sys

LAYERS = [
    ["quant"],
    ["engine/core"],
    ["engine/gguf"],
    ["kernels_cpu", "kernels_cuda"],
    ["backends", "engine/tokenizer"],
    ["engine/model", "engine/sampler", "offload", "predictor"],
    ["engine/synth", "engine/hub"],
    ["engine/runtime"],
    ["engine/chat"],
    ["engine/server"],
    ["tools"],
]
LEVEL = {folder: i for i, folders in enumerate(LAYERS) for folder in folders}
# The CMake library of each folder; strata_engine is the umbrella of engine/* for the tools and
# tests (an INTERFACE library, on the tools' layer).
TARGETS = {
    "strata_quant": "quant", "strata_core": "engine/core", "strata_gguf": "engine/gguf",
    "strata_kernels_cpu": "kernels_cpu", "strata_kernels_cuda": "kernels_cuda", "strata_backends": "backends",
    "strata_model": "engine/model", "strata_tokenizer": "engine/tokenizer", "strata_sampler": "engine/sampler",
    "strata_offload": "offload", "strata_predictor": "predictor", "strata_synth": "engine/synth", "strata_hub": "engine/hub",
    "strata_runtime": "engine/runtime", "strata_chat": "engine/chat", "strata_server": "engine/server",
    "strata_engine": "tools", "strata": "tools",
}
SOURCE = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LINK = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)


def folder_of(path):
    """The layered folder a repository path lies in (the longest match), or None."""
    best = None
    for folder in LEVEL:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def allowed(src, dst):
    return src == dst or LEVEL[dst] < LEVEL[src]


def check_includes(root):
    bad = []
    for folder in LEVEL:
        base = os.path.join(root, folder)
        for dirpath, dirnames, files in os.walk(base):
            # A nested layered folder (engine/core inside engine) is checked as itself.
            rel_dir = os.path.relpath(dirpath, root)
            if folder_of(rel_dir) != folder:
                continue
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                path = os.path.join(rel_dir, name)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dst = folder_of(m.group(1))
                        if dst is not None and not allowed(folder, dst):
                            bad.append(f"{path}:{n}: includes {m.group(1)} (layer {LEVEL[dst]} {dst}) from layer "
                                       f"{LEVEL[folder]} {folder}")
    return bad


def check_links(root):
    bad = []
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "build")) and d != "tests"]
        if "CMakeLists.txt" not in files:
            continue
        path = os.path.relpath(os.path.join(dirpath, "CMakeLists.txt"), root)
        text = open(os.path.join(root, path), encoding="utf-8").read()
        for m in LINK.finditer(text):
            target = m.group(1)
            if target not in TARGETS:
                continue
            for dep in re.findall(r"\bstrata_\w+|\bstrata\b", m.group(2)):
                if dep in TARGETS and not allowed(TARGETS[target], TARGETS[dep]):
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{path}:{line}: {target} ({TARGETS[target]}) links {dep} ({TARGETS[dep]}), "
                               f"which is not below it")
    return bad


def self_test():
    """The check on a made-up tree: an upward include, a sideways include and an upward link
    must each be reported, and downward ones not."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        for folder in LEVEL:
            os.makedirs(os.path.join(root, folder), exist_ok=True)
        files = {
            "offload/a.cpp": '#include "engine/core/error.h"\n#include "engine/runtime/runtime.h"\n',
            "kernels_cpu/b.cpp": '#include "kernels_cuda/launch.h"\n#include "quant/x.h"\n',
            "offload/CMakeLists.txt": "target_link_libraries(strata_offload PUBLIC strata_core strata_runtime)\n",
        }
        for path, text in files.items():
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        bad = check_includes(root) + check_links(root)
        expected = ["offload/a.cpp:2:", "kernels_cpu/b.cpp:1:", "links strata_runtime"]
        ok = len(bad) == 3 and all(any(e in b for b in bad) for e in expected)
        print("check_layers self-test:", "passed" if ok else f"FAILED, found {bad}")
        return 0 if ok else 1


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    missing = [f for f in LEVEL if not os.path.isdir(os.path.join(root, f))]
    if missing:
        print(f"check_layers: folders named in the layers are missing: {', '.join(missing)}")
        return 1
    bad = check_includes(root) + check_links(root)
    for line in bad:
        print(line)
    if bad:
        print(f"check_layers: {len(bad)} dependencies point up or sideways (layers: scripts/check_layers.py)")
        return 1
    print(f"check_layers: {len(LEVEL)} folders on {len(LAYERS)} layers, every #include and link points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
