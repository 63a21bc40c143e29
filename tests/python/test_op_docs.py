"""The op list as documented agrees with the library's (sk_op_info, what
`sk ops` prints): the op list in the public header's comment on sk_op_desc,
and the op headings of docs/ops.md. A new op without its documentation, or
a documented op the library lost, fails here."""

import os
import re

import superkernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _library_ops():
    return set(superkernel.op_names())


def _header_ops():
    text = open(os.path.join(ROOT, "include", "superkernel.h")).read()
    block = text[text.index("Ops of this release"):]
    block = block[: block.index("*/")]
    names = set()
    for line in block.splitlines():
        m = re.match(r"^ \*   ([a-z_][a-z_0-9]*(?:, [a-z_][a-z_0-9]*)*)\s", line)
        if m:
            names.update(n.strip() for n in m.group(1).split(","))
    return names


def _doc_ops():
    text = open(os.path.join(ROOT, "docs", "ops.md")).read()
    names = set()
    for heading in re.findall(r"^## (.+)$", text, re.M):
        title = re.sub(r"\s*\(.*\)$", "", heading)
        if re.fullmatch(r"[a-z_0-9]+(, [a-z_0-9]+)*", title):
            names.update(title.split(", "))
    return names


def test_header_lists_every_op():
    header, lib = _header_ops(), _library_ops()
    assert lib - header == set(), f"ops missing from superkernel.h's op list: {sorted(lib - header)}"
    assert header - lib == set(), f"superkernel.h lists ops the library lacks: {sorted(header - lib)}"


def test_ops_md_has_a_section_per_op():
    docs, lib = _doc_ops(), _library_ops()
    assert lib - docs == set(), f"ops without a section in docs/ops.md: {sorted(lib - docs)}"
    # trans_quant_param is a helper function documented beside the ops
    assert docs - lib - {"trans_quant_param"} == set(), f"docs/ops.md sections for unknown ops: {sorted(docs - lib)}"
