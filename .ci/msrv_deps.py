#!/usr/bin/env python3
"""Every locked dependency of a workspace crate declares a rust-version no newer than
the crate's own.

Only one toolchain can be installed on the CI machines, so the declared `rust-version`
is not built with. Clippy's `incompatible_msrv` checks our calls into the standard
library against it; this checks the other half cargo would hit first on an old
toolchain: a dependency in Cargo.lock that itself needs a newer compiler. Normal and
build dependencies only (what a user's build compiles), every feature, every target.
A dependency that declares no rust-version passes (nothing to compare).

Usage: python3 .ci/msrv_deps.py   (from anywhere in the repository; exit 1 on a finding)
"""

import json
import subprocess
import sys
from pathlib import Path


def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    meta = json.loads(out)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    failures = 0
    for member in meta["workspace_members"]:
        package = packages[member]
        declared = package.get("rust_version")
        if not declared:
            continue
        seen = set()
        stack = [member]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            for dep in nodes[current]["deps"]:
                if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
                    stack.append(dep["pkg"])
        seen.discard(member)
        newest = None
        for dep_id in sorted(seen):
            dep = packages[dep_id]
            needed = dep.get("rust_version")
            if not needed:
                continue
            if newest is None or version(needed) > version(newest[0]):
                newest = (needed, dep["name"])
            if version(needed) > version(declared):
                print(
                    f"{package['name']} declares rust-version {declared}, but its "
                    f"dependency {dep['name']} {dep['version']} needs {needed}",
                    file=sys.stderr,
                )
                failures += 1
        detail = f", newest needed {newest[0]} ({newest[1]})" if newest else ""
        print(f"{package['name']}: rust-version {declared}, {len(seen)} dependencies{detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
