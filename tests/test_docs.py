"""The docs stay true: every relative link (and #anchor) in README.md and docs/**/*.md
resolves, and every `hopgraph ...` command in a shell block of README.md and docs/*.md names a
real subcommand with options its --help declares (click's own parser on the real CLI objects,
no subprocess)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from hopgraph.cli import cli

ROOT = Path(__file__).resolve().parents[1]
LINKED = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md"])
LINKED += sorted((ROOT / "docs").rglob("*.md"))
COMMANDS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(\s*)(```|~~~)(.*)$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SHELLS = {"", "sh", "bash", "shell", "console", "zsh"}


def blocks(text: str) -> tuple[str, list[tuple[str, int, str]]]:
    """The text outside fenced code blocks (blocks blanked, lines kept), and each fenced
    block's language, first line number and content."""
    prose, found, lang, start, body, fence = [], [], None, 0, [], ""
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if lang is None and m:
            lang, start, body, fence = m.group(3).strip().lower(), n + 1, [], m.group(2)
            prose.append("")
        elif lang is not None and m and line.strip() == fence:
            found.append((lang, start, "\n".join(body)))
            lang = None
            prose.append("")
        elif lang is not None:
            body.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text without markup, lower case, punctuation dropped
    (letters, digits, spaces, hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose, _ = blocks(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for line in prose.split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    prose, _ = blocks(path.read_text(encoding="utf-8"))
    prose = re.sub(r"`[^`\n]*`", "", prose)  # inline code is not a link
    bad = []
    for n, line in enumerate(prose.split("\n"), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            where = f"{path.relative_to(ROOT)}:{n}: {target}"
            if not dest.exists():
                bad.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{where} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    return bad


def shell_commands(path: Path) -> list[tuple[str, list[str]]]:
    """Each `hopgraph ...` invocation in the shell blocks: where, and its arguments."""
    _, found = blocks(path.read_text(encoding="utf-8"))
    out = []
    for lang, start, body in found:
        if lang not in SHELLS:
            continue
        lines = body.split("\n")
        n = 0
        while n < len(lines):
            first, line = n, lines[n]
            while line.rstrip().endswith("\\") and n + 1 < len(lines):
                n += 1
                line = line.rstrip()[:-1] + " " + lines[n]
            n += 1
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:  # an unbalanced quote in a line that is not a hopgraph command
                assert "hopgraph " not in line, f"{path.name}:{start + first}: {line}"
                continue
            for i, tok in enumerate(tokens):
                if tok == "hopgraph" or tok.endswith("/hopgraph"):
                    args = []
                    for a in tokens[i + 1 :]:
                        if a in {"&&", "||", "|", ";", "&", ">", "2>", "<"}:
                            break
                        a = a.lstrip("[").rstrip("]")  # `[--set k=v]`: an optional option
                        if a and a != "...":
                            args.append(a)
                    out.append((f"{path.relative_to(ROOT)}:{start + first}", args))
    return out


def check_command(args: list[str]) -> None:
    """Parse ``hopgraph ARGS`` as click would, up to the values' types: the subcommand must
    exist and every option shown must be one it declares, with its number of values."""
    command: click.Command = cli
    name = "hopgraph"
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        sub = command.get_command(click.Context(command), args[0])
        if sub is None:
            raise click.UsageError(f"no command {args[0]!r} under {name!r}")
        name, command, args = f"{name} {args[0]}", sub, args[1:]
    # the command's own option parser: option names and their number of values, not the
    # values' types (INDEX_DIR or auto|on|off are placeholders) nor callbacks
    parser = command.make_parser(click.Context(command, info_name=name))
    parser.parse_args(list(args))


def test_every_relative_link_resolves():
    bad = [b for path in LINKED for b in broken_links(path)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_documented_commands_are_found():
    found = [c for path in COMMANDS for c in shell_commands(path)]
    shown = {args[0] for _, args in found if args}
    # the quick start's commands at least, so a parser that finds nothing cannot pass
    assert {"index", "search", "serve", "eval"} <= shown


def test_every_documented_hopgraph_command_parses():
    bad = []
    for path in COMMANDS:
        for where, args in shell_commands(path):
            try:
                check_command(args)
            except click.ClickException as exc:
                bad.append(f"{where}: hopgraph {' '.join(args)}\n    {exc.format_message()}")
    assert not bad, "commands the CLI does not accept:\n" + "\n".join(bad)


def test_the_checks_catch_a_broken_link_and_a_renamed_option(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A section\n\n[ok](#a-section) [gone](#no-section) [file](missing.md)\n",
        encoding="utf-8",
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        bad = broken_links(page)
    finally:
        ROOT = saved
    assert len(bad) == 2 and "#no-section" in bad[0] and "missing.md" in bad[1]
    check_command(["search", "ix/", "q", "--max-per-doc", "2", "-k", "3"])
    with pytest.raises(click.NoSuchOption):
        check_command(["search", "ix/", "q", "--max-per-document", "2"])
    with pytest.raises(click.UsageError):
        check_command(["serach", "ix/", "q"])
