#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Checks a program's man page against the program (metaroce_add_util).

  manpage-check.py PAGE NAME PROGRAM
  manpage-check.py PAGE NAME          (a page that documents no program)

Fails unless PAGE renders without warnings (man --warnings, as lintian runs
it), its .TH names NAME in PAGE's section, every long option that
"PROGRAM --help" prints appears in the page, and every option the page's
OPTIONS section describes (the tag after .TP) is in that help.  Without
PROGRAM only the rendering and the .TH are checked.
"""
import os
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def plain(roff):
    """The page's text with roff's escapes for '-' and fonts removed."""
    text = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", roff)
    return text.replace("\\-", "-").replace("\\e", "\\")


def option_tags(roff):
    """Options named by the .TP tags of the OPTIONS section."""
    tags, in_options, lines = set(), False, roff.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            in_options = line.split(None, 1)[1:] == ["OPTIONS"]
        elif in_options and line.startswith(".TP") and i + 1 < len(lines):
            tags.update(OPTION.findall(plain(lines[i + 1])))
    return tags


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    page, name, program = (sys.argv[1:] + [None])[:3]
    errors = []
    with open(page, encoding="utf-8") as f:
        roff = f.read()

    section = os.path.splitext(page)[1][1:]
    th = re.search(r"^\.TH\s+(\S+)\s+(\S+)", roff, re.M)
    if not th or th.group(1) != name.upper() or th.group(2) != section:
        errors.append(f".TH is {th and th.group(0)!r}, not {name.upper()} {section}")

    env = dict(os.environ, LC_ALL="C.UTF-8", MANROFFSEQ="", MANWIDTH="80")
    render = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l",
                             "-Tutf8", "-Z", page], env=env,
                            capture_output=True, text=True)
    if render.returncode or render.stderr:
        errors.append(f"man --warnings (status {render.returncode}):\n"
                      f"{render.stderr}")
    if program is None:
        if errors:
            sys.exit(f"{page}:\n  " + "\n  ".join(errors))
        print(f"{page}: renders cleanly")
        return

    help_text = subprocess.run([program, "--help"], capture_output=True,
                               text=True, check=True, timeout=20).stdout
    helped = set(OPTION.findall(help_text))
    if "--help" not in helped:
        errors.append(f"{program} --help does not mention --help")
    text = plain(roff)
    for opt in sorted(helped):
        if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text):
            errors.append(f"{opt} (in --help) is not in {page}")
    for opt in sorted(option_tags(roff) - helped):
        errors.append(f"{opt} (described in {page}) is not in --help")

    if errors:
        sys.exit(f"{page}:\n  " + "\n  ".join(errors))
    print(f"{page}: {len(helped)} options of {name} documented")


if __name__ == "__main__":
    main()
