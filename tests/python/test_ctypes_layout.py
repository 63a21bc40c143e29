"""The ctypes mirror of the C API (superkernel/_lib.py) against the header
it mirrors: every struct's size and every field's offset as the C compiler
lays them out (a small program built from include/superkernel.h at test
time), and every prototype's name and parameter count as the header
declares it. A field added in C and not in Python, a reordered field, a
retyped one of another size, or a prototype whose C signature changed
fails here instead of corrupting memory at run time."""

import ctypes
import os
import re
import shutil
import subprocess

import pytest

from superkernel import _lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "include", "superkernel.h")
HEADERS = (HEADER, os.path.join(ROOT, "include", "superkernel_model.h"),
           os.path.join(ROOT, "include", "superkernel_checkpoint.h"))


def test_every_mirror_is_listed():
    mirrors = {v for v in vars(_lib).values() if isinstance(v, type) and issubclass(v, ctypes.Structure)}
    assert mirrors == set(_lib.C_STRUCTS), f"structs not in _lib.C_STRUCTS: {mirrors - set(_lib.C_STRUCTS)}"


def _c_layout(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("SKIPPED: no C compiler to lay out the header's structs")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "superkernel.h"',
             '#include "superkernel_model.h"', "int main(void) {"]
    for cls, cname in _lib.C_STRUCTS.items():
        lines.append(f'  printf("{cname} %zu\\n", sizeof({cname}));')
        for field, _ in cls._fields_:
            lines.append(f'  printf("{cname}.{field} %zu\\n", offsetof({cname}, {field}));')
    lines += ["  return 0;", "}"]
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text("\n".join(lines) + "\n")
    built = subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), str(src), "-o", str(exe)],
                           capture_output=True, text=True)
    assert built.returncode == 0, f"a field the Python mirror names is not in the C struct:\n{built.stderr}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


def test_struct_layouts_match_the_header(tmp_path):
    c = _c_layout(tmp_path)
    wrong = []
    for cls, cname in _lib.C_STRUCTS.items():
        if ctypes.sizeof(cls) != c[cname]:
            wrong.append(f"sizeof({cname}) is {c[cname]} in C, {ctypes.sizeof(cls)} in Python")
        for field, _ in cls._fields_:
            py = getattr(cls, field).offset
            if py != c[f"{cname}.{field}"]:
                wrong.append(f"{cname}.{field} at {c[cname + '.' + field]} in C, {py} in Python")
    assert not wrong, "; ".join(wrong)


def _header_prototypes():
    text = re.sub(r"/\*.*?\*/", "", "".join(open(h).read() for h in HEADERS), flags=re.S)
    protos = {}
    for m in re.finditer(r"SK_API\s+[^;{]*?\b(sk_\w+)\s*\(([^)]*)\)\s*;", text, re.S):
        params = m.group(2).strip()
        protos[m.group(1)] = 0 if params in ("", "void") else params.count(",") + 1
    return protos


def test_prototypes_match_the_header():
    header = _header_prototypes()
    assert len(header) > 50, f"parsed only {len(header)} SK_API prototypes from {HEADER}"
    wrong = []
    for name, (_restype, argtypes) in _lib._PROTOTYPES.items():
        if name not in header:
            wrong.append(f"{name} is not declared in superkernel.h, superkernel_model.h or superkernel_checkpoint.h")
        elif header[name] != len(argtypes):
            wrong.append(f"{name} takes {header[name]} parameters in C, {len(argtypes)} in Python")
    assert not wrong, "; ".join(wrong)
