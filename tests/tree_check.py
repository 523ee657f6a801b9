#!/usr/bin/env python3
"""The tree speaks of rmaop alone, and its documents' links resolve.

    tree_check.py ROOT          check the tracked files of the checkout at ROOT (git ls-files; every file
                                under ROOT when it is not a git checkout)
    tree_check.py --self-test   check a made-up tree that breaks every rule, and fail unless each break is found

Rules:
  1. No work-diary words in a file's text: numbered work periods, stops or issue numbers (the patterns below).
  2. No file or folder name containing the first of those words.
  3. Every relative link in a Markdown file resolves: the file exists and, for "file.md#anchor" or "#anchor",
     the heading exists (GitHub's anchor rules).
Prints one line per finding and a closing "N passed, N failed" line (one check per rule); exits 1 on any finding.
"""
import os
import re
import subprocess
import sys
import tempfile

# Built from pieces so that this file does not match itself.
WORDS = ["[Ss]" + "ession", "[Ss]" + "top", "[Ii]" + "ssue"]
TEXT_RE = re.compile("(" + "|".join(WORDS) + r") [0-9]")
NAME_RE = re.compile("s" + "ession", re.IGNORECASE)
LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return [f for f in files if os.path.exists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces become hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = text.strip().lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def anchors(path, cache):
    if path not in cache:
        found, seen, fenced = set(), {}, False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if FENCE_RE.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else HEADING_RE.match(line)
                if m:
                    s = slug(m.group(2))
                    k = seen.get(s, 0)
                    seen[s] = k + 1
                    found.add(s if k == 0 else "%s-%d" % (s, k))
        cache[path] = found
    return cache[path]


def check(root):
    files = tracked_files(root)
    findings = {"words": [], "names": [], "links": []}
    cache = {}
    for rel in files:
        if NAME_RE.search(rel):
            findings["names"].append("%s: the file name names a work period" % rel)
        path = os.path.join(root, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        fenced = False
        for no, line in enumerate(text.splitlines(), 1):
            m = TEXT_RE.search(line)
            if m:
                findings["words"].append("%s:%d: diary words '%s': %s" % (rel, no, m.group(0), line.strip()[:100]))
            if not rel.endswith(".md"):
                continue
            if FENCE_RE.match(line):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK_RE.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(dest):
                    findings["links"].append("%s:%d: link to a missing file: %s" % (rel, no, target))
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest, cache):
                    findings["links"].append("%s:%d: link to a missing heading: %s" % (rel, no, target))
    return len(files), findings


def report(nfiles, findings, out=sys.stdout):
    failed = 0
    for rule, lines in findings.items():
        for line in lines:
            print(line, file=out)
        failed += bool(lines)
    print("tree_check: %d files; diary words %d, diary file names %d, broken links %d"
          % (nfiles, len(findings["words"]), len(findings["names"]), len(findings["links"])), file=out)
    print("%d passed, %d failed" % (len(findings) - failed, failed), file=out)
    return failed


def self_test():
    """A made-up tree with one break of each rule and one good link of each kind: each break must be found,
    and nothing else."""
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        word = "S" + "ession"
        write("README.md", "# Top\n\n## Choose a path\n\nSee [a](docs/a.md), [b](docs/a.md#the-2--h200-table), "
              "[c](#choose-a-path), [web](https://example.org/x), [gone](docs/missing.md), "
              "[bad anchor](docs/a.md#nowhere).\n\n```\n[in code](nowhere.md)\n```\n")
        write("docs/a.md", "# A\n\n## The `2 × H200` table\n\nFixed in %s 12.\n" % word.lower())
        write("src/x.c", "/* see i" + "ssue 4 */\nint istop_3 = 3; /* PyLops istop = 3 */\n")
        write("docs/runs/%s-notes.txt" % word.lower(), "plain\n")
        write("tests/ok.c", "/* nothing to find */\n")
        nfiles, f = check(root)
        expect = {"words": 2, "names": 1, "links": 2}
        got = {k: len(v) for k, v in f.items()}
        report(nfiles, f, out=sys.stderr)
        if got != expect:
            print("tree_check self-test: expected %s, found %s" % (expect, got))
            print("0 passed, 1 failed")
            return 1
        print("tree_check self-test: every planted break found, nothing else")
        print("1 passed, 0 failed")
        return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: tree_check.py ROOT | --self-test", file=sys.stderr)
        return 2
    nfiles, findings = check(argv[1])
    return 1 if report(nfiles, findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
