#!/usr/bin/env python3
"""The public surface of the `netproto` crate, read from its rustdoc output.

Lists every public item (module-level items, inherent methods and associated
constants, public fields, enum variants, trait methods) as one line each, sorted.
CI compares the listing with the committed `netproto/public-api.txt`, so a change
to the public surface shows up in review as a diff of that file.

    cargo doc -p netproto --no-deps
    python3 .ci/public_api.py            # check: exit 1 and a diff when it changed
    python3 .ci/public_api.py --bless    # rewrite netproto/public-api.txt
"""
import difflib
import html
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOC = os.path.join(ROOT, "target", "doc", "netproto")
LISTING = os.path.join(ROOT, "netproto", "public-api.txt")

KINDS = {"struct", "enum", "trait", "fn", "constant", "type", "derive", "macro", "static"}


def items():
    page = open(os.path.join(DOC, "all.html"), encoding="utf-8").read()
    for href in sorted(set(re.findall(r'href="([^"#]+\.html)"', page))):
        parts = href.split("/")
        kind, _, name = parts[-1][: -len(".html")].partition(".")
        if kind not in KINDS:
            continue
        path = "::".join(["netproto", *parts[:-1], name])
        yield kind, path, os.path.join(DOC, *parts)


def members(kind, path, file):
    page = open(file, encoding="utf-8").read()
    out = []
    # Fields and variants.
    for field in re.findall(r'id="structfield\.([A-Za-z0-9_]+)"', page):
        out.append(f"field {path}::{field}")
    for variant in re.findall(r'id="variant\.([A-Za-z0-9_]+)"', page):
        out.append(f"variant {path}::{variant}")
    # Inherent items: the section before the trait implementations.
    inherent = page
    for marker in ('id="trait-implementations"', 'id="synthetic-implementations"',
                   'id="blanket-implementations"'):
        cut = inherent.find(marker)
        if cut >= 0:
            inherent = inherent[:cut]
    if kind == "trait":
        # A trait's own items: required and provided methods, associated items.
        for item_kind, name in re.findall(
            r'id="(tymethod|method|associatedconstant|associatedtype)\.([A-Za-z0-9_]+)"', inherent
        ):
            out.append(f"{item_kind.replace('tymethod', 'method')} {path}::{name}")
    else:
        for item_kind, name in re.findall(
            r'id="(method|associatedconstant)\.([A-Za-z0-9_]+)"', inherent
        ):
            out.append(f"{item_kind} {path}::{name}")
    return out


def listing():
    lines = []
    for kind, path, file in items():
        lines.append(f"{kind} {path}")
        lines.extend(members(kind, path, file))
    return sorted(set(html.unescape(line) for line in lines))


def main():
    if not os.path.exists(os.path.join(DOC, "all.html")):
        sys.exit("no rustdoc output: run `cargo doc -p netproto --no-deps` first")
    now = listing()
    kinds = {}
    for line in now:
        kind = line.split()[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    if "--bless" in sys.argv:
        with open(LISTING, "w", encoding="utf-8") as f:
            f.write("\n".join(now) + "\n")
        print(f"wrote {LISTING}: {len(now)} public items ({summary})")
        return
    try:
        before = open(LISTING, encoding="utf-8").read().splitlines()
    except FileNotFoundError:
        before = []
    if before != now:
        sys.stdout.writelines(
            line + "\n"
            for line in difflib.unified_diff(before, now, "netproto/public-api.txt", "rustdoc", lineterm="")
        )
        sys.exit(
            "the public API changed: review the diff above, then run "
            "`python3 .ci/public_api.py --bless` and commit netproto/public-api.txt"
        )
    print(f"public API unchanged: {len(now)} items ({summary})")


main()
