#!/usr/bin/env python3
"""Run the command examples of the README and docs, so that none rots.

Every ```sh block of README.md, CONTRIBUTING.md, docs/*.md and the folders'
README.md files either runs, as written, in this test, or carries a visible
line saying why it does not:

    # not run by the tests: REASON

(the two top commands, long benchmarks, GPU and real-NIC steps, multi-host
launches, examples that need a live deployment). Usage synopses belong in
```text blocks.

  check_doc_examples.py SRC --check          every block classified (no root)
  check_doc_examples.py SRC BUILD [--list]   run the runnable blocks (root)

A block runs with bash -eo pipefail in a scratch folder whose entries link
to the source tree's top-level folders and `build` to BUILD, so `build/...`
and `train/models/...` resolve and the files a block writes stay there. A
block must end within BLOCK_TIMEOUT; namespaces or a test bed a failed
block leaves behind are taken down.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^\s*# not run by the tests: (\S.*)$")
FENCE = re.compile(r"^```(\S*)\s*$")
SHELL = {"sh", "bash", "shell", "console"}
BLOCK_TIMEOUT = 180  # s: every run block takes < 60 s on an idle box


def doc_files(src):
    names = ["README.md", "CONTRIBUTING.md"]
    names += sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    names += sorted(
        os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "*", "README.md"))
    )
    return [n for n in names if os.path.isfile(os.path.join(src, n))]


def blocks(src):
    """(file, line, lang, text) of every fenced block."""
    out = []
    for name in doc_files(src):
        lines = open(os.path.join(src, name), encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if m:
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                if j == len(lines):
                    out.append((name, i + 1, "UNCLOSED", ""))
                    break
                out.append((name, i + 1, m.group(1), "\n".join(lines[i + 1 : j])))
                i = j
            i += 1
    return out


def classify(src):
    """(runnable, skipped, errors): shell blocks to run, (where, reason)."""
    run, skipped, errors = [], [], []
    for name, line, lang, text in blocks(src):
        where = f"{name}:{line}"
        if lang == "UNCLOSED":
            errors.append(f"{where}: a ``` block that never closes")
            continue
        if lang not in SHELL:
            continue
        reasons = [m.group(1) for m in map(MARK.match, text.split("\n")) if m]
        if reasons:
            skipped.append((where, reasons[0]))
        elif "# not run by the tests" in text:
            errors.append(f"{where}: '# not run by the tests' needs ': REASON'")
        else:
            run.append((where, text))
    return run, skipped, errors


def scratch(src, build):
    d = tempfile.mkdtemp(prefix="ice-doc-")
    for e in os.listdir(src):
        if e in ("build", ".git") or e.startswith("build-"):
            continue
        os.symlink(os.path.join(os.path.abspath(src), e), os.path.join(d, e))
    os.symlink(os.path.abspath(build), os.path.join(d, "build"))
    return d


def netns():
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {l.split()[0] for l in r.stdout.splitlines() if l.strip()}


def tidy(cwd, build, before):
    """Take down what a failed block left: its test bed, then namespaces."""
    left = netns() - before
    if not left:
        return []
    fab = os.path.join(build, "fabric", "ice-fabric")
    subprocess.run([fab, "down"], cwd=cwd, capture_output=True, timeout=120)
    for ns in sorted(netns() - before):
        if not ns.startswith("ice"):
            continue
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for p in pids.stdout.split():
            subprocess.run(["kill", p], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    return sorted(left)


def main(argv):
    if len(argv) >= 2 and argv[1] == "--check":
        src = argv[0]
        run, skipped, errors = classify(src)
        for e in errors:
            print("ERROR", e)
        for where, reason in skipped:
            print(f"skip  {where}: {reason}")
        for where, _ in run:
            print(f"run   {where}")
        print(f"{len(run)} blocks run by the fabric suite, {len(skipped)} marked, "
              f"{len(errors)} errors")
        return 1 if errors or not run else 0
    src, build = argv[0], argv[1]
    run, skipped, errors = classify(src)
    if errors:
        for e in errors:
            print("ERROR", e)
        return 1
    if "--list" in argv:
        for where, text in run:
            print(f"== {where}\n{text}")
        return 0
    if os.geteuid() != 0:
        print("SKIP: the examples bring up test beds (root)")
        return 77
    cwd = scratch(src, build)
    failed = []
    try:
        for where, text in run:
            before = netns()
            t0 = time.monotonic()
            print(f"== {where}", flush=True)
            print(text, flush=True)
            try:
                r = subprocess.run(["bash", "-eo", "pipefail", "-c", text], cwd=cwd,
                                   capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
                ok, tail = r.returncode == 0, (r.stdout + r.stderr)[-3000:]
                why = f"exit {r.returncode}"
            except subprocess.TimeoutExpired as e:
                ok, why = False, f"longer than {BLOCK_TIMEOUT} s"
                tail = ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace")[-3000:]
            left = tidy(cwd, build, before)
            if left:
                ok, why = False, why + f"; left namespaces {' '.join(left)} (taken down)"
            print(("ok   " if ok else "FAIL ") + where + ("" if ok else ": " + why) +
                  f" ({time.monotonic() - t0:.1f} s)", flush=True)
            if not ok:
                print(tail)
                failed.append(where)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    print(f"{len(run) - len(failed)} of {len(run)} examples ran as written; "
          f"{len(skipped)} marked not run")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
