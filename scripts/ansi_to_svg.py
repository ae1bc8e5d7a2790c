#!/usr/bin/env python3
"""Turns a terminal screen with ANSI colours (`tmux capture-pane -e -p`) into an SVG.

Used for the README's picture of `fixscope live --tui` (docs/img/tui.svg):

    tmux capture-pane -e -p -t SESSION > screen.ans
    scripts/ansi_to_svg.py screen.ans docs/img/tui.svg

Only what ratatui emits is handled: SGR colours (8/16 and 256-colour), bold, reset.
"""
import html
import re
import sys

CELL_W, CELL_H, FONT = 8.4, 17, 14
FG, BG = "#d0d0d0", "#1c1c1c"
BASE = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5"]
BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def colour256(n):
    if n < 8:
        return BASE[n]
    if n < 16:
        return BRIGHT[n - 8]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def apply(params, state):
    codes = [int(c) if c else 0 for c in params.split(";")] if params else [0]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            state.update(fg=None, bg=None, bold=False)
        elif c == 1:
            state["bold"] = True
        elif c == 22:
            state["bold"] = False
        elif 30 <= c <= 37:
            state["fg"] = BASE[c - 30]
        elif 90 <= c <= 97:
            state["fg"] = BRIGHT[c - 90]
        elif 40 <= c <= 47:
            state["bg"] = BASE[c - 40]
        elif 100 <= c <= 107:
            state["bg"] = BRIGHT[c - 100]
        elif c == 39:
            state["fg"] = None
        elif c == 49:
            state["bg"] = None
        elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
            state["fg" if c == 38 else "bg"] = colour256(codes[i + 2])
            i += 2
        i += 1


def main(src, dst):
    lines = open(src, encoding="utf-8").read().rstrip("\n").split("\n")
    width = max(len(SGR.sub("", l)) for l in lines)
    out = []
    state = {"fg": None, "bg": None, "bold": False}
    for y, line in enumerate(lines):
        x = 0
        pos = 0
        for m in list(SGR.finditer(line)) + [None]:
            text = line[pos : m.start() if m else len(line)]
            if text:
                top = y * CELL_H
                if state["bg"]:
                    out.append(
                        '<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                        % (x * CELL_W, top, len(text) * CELL_W, CELL_H, state["bg"])
                    )
                if text.strip():
                    weight = ' font-weight="bold"' if state["bold"] else ""
                    out.append(
                        '<text x="%.1f" y="%d" fill="%s"%s textLength="%.1f" '
                        'lengthAdjust="spacingAndGlyphs">%s</text>'
                        % (x * CELL_W, top + CELL_H - 4, state["fg"] or FG, weight,
                           len(text) * CELL_W, html.escape(text).replace(" ", "\u00a0"))
                    )
                x += len(text)
            if m:
                apply(m.group(1), state)
                pos = m.end()
    w, h = width * CELL_W, len(lines) * CELL_H
    svg = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%d" '
        'viewBox="0 0 %.0f %d">' % (w, h, w, h),
        '<rect width="100%%" height="100%%" fill="%s"/>' % BG,
        # Spaces as no-break spaces: renderers collapse runs of plain ones.
        '<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="%d">' % FONT,
        *out,
        "</g></svg>",
    ]
    open(dst, "w", encoding="utf-8").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: ansi_to_svg.py SCREEN.ans OUT.svg")
    main(sys.argv[1], sys.argv[2])
