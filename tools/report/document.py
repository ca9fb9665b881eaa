"""The report as a list of blocks, written both as Markdown and as HTML."""
import base64
import html
import os
import re

from .plot import DPI, plt


def slug(text):
    """A heading's anchor as GitHub makes it: lower case, punctuation
    other than '-' and '_' dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


class Link:
    """A table cell or list item that links to a heading of the report
    (Doc.anchor gives the anchor)."""

    def __init__(self, text, anchor):
        self.text, self.anchor = text, anchor

    def __str__(self):
        return self.text


def md_cell(c):
    if isinstance(c, Link):
        return f"[{c.text}](#{c.anchor})"
    if isinstance(c, list):
        return ", ".join(md_cell(x) for x in c)
    return str(c).replace("|", "\\|").replace("\n", " ")


def html_cell(c):
    if isinstance(c, Link):
        return f"<a href='#{html.escape(c.anchor)}'>{html.escape(c.text)}</a>"
    if isinstance(c, list):
        return ", ".join(html_cell(x) for x in c)
    return html.escape(str(c))


class Doc:
    """Blocks rendered both as Markdown and as HTML."""

    def __init__(self, out, figures=True):
        """figures=False (report --no-figures): every figure is left out, the
        text is the same; laying out and writing the PNGs is most of a
        report's time (a study of every preset: 9 s with them, 2 s without)."""
        self.out = out
        self.draw = figures
        self.blocks = []
        self.figures = []
        if figures:
            os.makedirs(os.path.join(out, "figures"), exist_ok=True)

    def h(self, level, text):
        self.blocks.append(("h", level, text))

    def anchor(self, text):
        """The anchor of the heading `text` (the first one so named), as
        both renderings give it."""
        return slug(text)

    def p(self, text):
        self.blocks.append(("p", text))

    def bullets(self, items):
        if items:
            self.blocks.append(("ul", list(items)))

    def table(self, header, rows):
        if rows:
            self.blocks.append(("table", header, rows))

    def pre(self, text):
        self.blocks.append(("pre", text))

    def figure(self, fig, name, caption):
        if not self.draw:
            plt.close(fig)
            return
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, "figures", name), dpi=DPI, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(name)
        self.blocks.append(("img", name, caption))

    def markdown(self):
        lines = []
        for b in self.blocks:
            if b[0] == "h":
                lines += ["#" * b[1] + " " + b[2], ""]
            elif b[0] == "p":
                lines += [b[1], ""]
            elif b[0] == "ul":
                lines += ["- " + x for x in b[1]] + [""]
            elif b[0] == "table":
                lines.append("| " + " | ".join(md_cell(c) for c in b[1]) + " |")
                lines.append("|" + "|".join("---" for _ in b[1]) + "|")
                lines += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in b[2]]
                lines.append("")
            elif b[0] == "pre":
                lines += ["```", b[1], "```", ""]
            elif b[0] == "img":
                lines += [f"![{b[2]}](figures/{b[1]})", "", f"*{b[2]}*", ""]
        return "\n".join(lines)

    def html(self, title):
        e = html.escape
        parts = [
            "<!DOCTYPE html>",
            "<html><head><meta charset='utf-8'><title>" + e(title) + "</title>",
            "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45}"
            "table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #ccc;padding:3px 6px}"
            "th{background:#f2f2f2}img{max-width:100%}figcaption{font-style:italic;color:#444}"
            "pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap}</style></head><body>",
        ]
        seen = set()
        for b in self.blocks:
            if b[0] == "h":
                # The id GitHub gives the Markdown heading (the first of a
                # name; later ones get none rather than GitHub's -1, -2).
                a = slug(b[2])
                ident = f" id='{e(a)}'" if a not in seen else ""
                seen.add(a)
                parts.append(f"<h{b[1]}{ident}>{e(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                parts.append("<p>" + e(b[1]) + "</p>")
            elif b[0] == "ul":
                parts.append("<ul>" + "".join("<li>" + e(x) + "</li>" for x in b[1]) + "</ul>")
            elif b[0] == "table":
                parts.append("<table><tr>" + "".join("<th>" + e(str(c)) + "</th>" for c in b[1]) + "</tr>")
                for r in b[2]:
                    parts.append("<tr>" + "".join("<td>" + html_cell(c) + "</td>" for c in r) + "</tr>")
                parts.append("</table>")
            elif b[0] == "pre":
                parts.append("<pre>" + e(b[1]) + "</pre>")
            elif b[0] == "img":
                with open(os.path.join(self.out, "figures", b[1]), "rb") as f:
                    data = base64.b64encode(f.read()).decode("ascii")
                parts.append(f"<figure><img alt='{e(b[2])}' src='data:image/png;base64,{data}'>"
                             f"<figcaption>{e(b[2])}</figcaption></figure>")
        parts.append("</body></html>")
        return "\n".join(parts)

    def write(self, title):
        """report.md and report.html, each replaced atomically."""
        for name, render in (("report.md", self.markdown), ("report.html", lambda: self.html(title))):
            tmp = os.path.join(self.out, name + ".tmp")
            with open(tmp, "w") as f:
                f.write(render())
            os.replace(tmp, os.path.join(self.out, name))
