#!/usr/bin/env python3
"""Writes airlock's manual pages from its own --help texts, so that the two never differ.

    render_man.py AIRLOCK OUTDIR [VERSION]

airlock.1 from `airlock --help`, airlock-COMMAND.1 from `airlock COMMAND --help` for every
command `airlock --help` lists. A help text is read as airlock writes them all: "Usage:"
lines, paragraphs, headings that end with a colon ("Options:", "Filesystem:"), option lines
("  -c, --config FILE   what it does") with deeper-indented continuations, and an
"Exit status:" paragraph.
"""
import re
import subprocess
import sys
from pathlib import Path

HEADING = re.compile(r"^[A-Z][^:]{0,78}:$")
DESCRIPTION_COLUMN = 22  # where airlock's help texts start an option's description


def roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return ("\\&" + text) if text.startswith((".", "'")) else text


def item(line: str):
    """(term, description) for an option or command line of a list, or None."""
    body = line.rstrip()
    if not re.match(r"^ {2,6}\S", body):
        return None
    m = re.match(r"^ {2,6}(\S.*?) {2,}(\S.*)$", body)
    if m:
        return m.group(1), m.group(2)
    # A long option whose argument runs up to the description's column: one space between.
    c = DESCRIPTION_COLUMN
    if body.lstrip().startswith("-") and len(body) > c and body[c - 1] == " " and body[c] != " ":
        return body[: c - 1].strip(), body[c:]
    if body.lstrip().startswith("-"):
        return body.strip(), ""
    return None


def split_usage(text: str):
    """The "Usage:" lines (with their continuations) and the rest of the text."""
    usage, rest = [], []
    for line in text.rstrip("\n").split("\n"):
        if line.startswith("Usage:"):
            usage.append(line[len("Usage:"):].strip())
        elif usage and not rest and line.startswith("       airlock"):
            usage.append(line.strip())
        else:
            rest.append(line)
    return usage, rest


def render(name: str, summary: str, text: str, version: str) -> str:
    usage, lines = split_usage(text)
    out = [f'.TH {name.upper()} 1 "" "airlock {version}" "airlock manual"', ".SH NAME",
           f"{roff(name)} \\- {roff(summary)}"]
    if usage:
        out += [".SH SYNOPSIS", ".nf", *map(roff, usage), ".fi"]
    section = None  # description, list (options or commands), exit
    open_paragraph = False
    for line in lines:
        if not line.strip():
            open_paragraph = False
            continue
        if line.startswith("Exit status:"):
            out += ['.SH "EXIT STATUS"', roff(line[len("Exit status:"):].strip())]
            section, open_paragraph = "exit", True
            continue
        if HEADING.match(line):
            heading = line[:-1]
            if heading in ("Options", "Commands"):
                out.append(".SH " + heading.upper())
            else:  # a group of options
                if section != "list":
                    out.append(".SH OPTIONS")
                out.append(".SS " + roff(heading))
            section, open_paragraph = "list", False
            continue
        entry = item(line) if section == "list" else None
        if entry is not None:
            out += [".TP", "\\fB" + roff(entry[0]) + "\\fR"]
            if entry[1]:
                out.append(roff(entry[1]))
            open_paragraph = True
            continue
        if line.startswith(" ") and open_paragraph:
            out.append(roff(line.strip()))  # an entry's continuation
            continue
        if section is None:
            out.append(".SH DESCRIPTION")
            section = "description"
        elif not open_paragraph:
            out.append(".PP")
        out.append(roff(line.strip()))
        open_paragraph = True
    return "\n".join(out) + "\n"


def help_text(airlock: str, *args: str) -> str:
    return subprocess.run([airlock, *args, "--help"], check=True, capture_output=True, text=True).stdout


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    airlock, outdir = sys.argv[1], Path(sys.argv[2])
    version = sys.argv[3] if len(sys.argv) == 4 else ""
    outdir.mkdir(parents=True, exist_ok=True)
    top = help_text(airlock)
    # It starts "airlock - egress policy for sandboxes: ...": the name's summary up to the colon.
    summary = top.split(" - ", 1)[1].split(":", 1)[0]
    commands = re.findall(r"^  (\S+) {2,}(.*)$", top.split("Commands:", 1)[1].split("\n\n", 1)[0], re.M)
    (outdir / "airlock.1").write_text(render("airlock", summary, top, version))
    for name, what in commands:
        (outdir / f"airlock-{name}.1").write_text(render("airlock-" + name, what, help_text(airlock, name), version))
    print(f"{len(commands) + 1} pages in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
