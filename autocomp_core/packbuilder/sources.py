"""Reading documentation into Markdown text: files, folders and fetched pages.

Markdown and plain text are read as they are. HTML goes through BeautifulSoup (the
standard library's parser underneath, so nothing to compile): headings become ``#``
lines, ``<pre>`` blocks fenced code, list items ``-`` lines, tables ``|`` rows; scripts,
styles and navigation are dropped. PDF text comes from pypdf (pure Python, BSD): lines
set in a larger font than the body become headings, lines set in a monospaced font
become fenced code. Both libraries are the optional extra ``autocomp-core[pack]``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from ..errors import ConfigError

KINDS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
CONTENT_TYPES = {
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
}
MISSING_EXTRA = "pip install 'autocomp-core[pack]'"


class SourceError(ConfigError):
    """A source cannot be read; the message names it and says why in one line."""


@dataclass
class Document:
    """One source document as Markdown text."""

    id: str  # d1, d2, ... in the order the sources were given
    origin: str  # the path or URL it came from
    kind: str  # markdown, text, html, pdf
    text: str
    size: int  # bytes read

    def to_dict(self) -> dict[str, Any]:
        return vars(self).copy()


def kind_of_path(path: Path) -> str | None:
    return KINDS.get(path.suffix.lower())


def kind_of_content_type(content_type: str, url: str) -> str | None:
    kind = CONTENT_TYPES.get(content_type.split(";")[0].strip().lower())
    if kind in (None, "text"):  # servers often send Markdown as text/plain
        return kind_of_path(Path(url.split("?")[0].split("#")[0])) or kind
    return kind


def to_markdown(kind: str, data: bytes, origin: str) -> str:
    """The Markdown text of a document's bytes."""
    if kind == "pdf":
        return pdf_to_markdown(data, origin)
    text = data.decode("utf-8", errors="replace")
    return html_to_markdown(text) if kind == "html" else text


def source_files(path: Path) -> list[Path]:
    """The readable files of a file or folder argument, in a stable order."""
    if path.is_file():
        if kind_of_path(path) is None:
            raise SourceError(
                f"{path}: not a Markdown, HTML, text or PDF file "
                f"(known endings: {', '.join(sorted(KINDS))})"
            )
        return [path]
    if path.is_dir():
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and kind_of_path(p)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    raise SourceError(f"{path}: no such file or folder")


# ---- HTML -------------------------------------------------------------------------------

_DROPPED = ["script", "style", "noscript", "nav", "header", "footer", "template", "svg", "form"]
_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "blockquote",
    "figure",
    "figcaption",
    "dl",
    "dt",
    "dd",
    "ul",
    "ol",
    "body",
    "details",
    "summary",
}


def _bs4():
    try:
        import bs4
    except ImportError:
        raise SourceError(f"reading HTML needs beautifulsoup4: {MISSING_EXTRA}") from None
    return bs4


class _MarkdownWriter:
    def __init__(self, bs4: Any) -> None:
        self.bs4 = bs4
        self.blocks: list[str] = []
        self.line: list[str] = []

    def flush(self) -> None:
        text = " ".join("".join(self.line).split())
        if text:
            self.blocks.append(text)
        self.line = []

    def walk(self, node: Any) -> None:
        for child in node.children:
            if isinstance(child, self.bs4.Comment):
                continue
            if isinstance(child, self.bs4.NavigableString):
                self.line.append(str(child))
                continue
            name = child.name
            if re.fullmatch(r"h[1-6]", name):
                self.flush()
                self.blocks.append("#" * int(name[1]) + " " + child.get_text(" ", strip=True))
            elif name == "pre":
                self.flush()
                classes = " ".join(
                    (child.get("class") or [])
                    + ((child.code.get("class") or []) if child.code else [])
                )
                lang = re.search(r"(?:language|lang)-([\w+-]+)", classes)
                code = child.get_text().strip("\n")
                self.blocks.append(f"```{lang.group(1) if lang else ''}\n{code}\n```")
            elif name == "code":
                self.line.append(f"`{child.get_text()}`")
            elif name == "br":
                self.flush()
            elif name == "li":
                self.flush()
                self.line.append("- ")
                self.walk(child)
                self.flush()
            elif name == "tr":
                self.flush()
                cells = [c.get_text(" ", strip=True) for c in child.find_all(["th", "td"])]
                self.blocks.append("| " + " | ".join(cells) + " |")
            elif name in _BLOCKS or name == "table":
                self.flush()
                self.walk(child)
                self.flush()
            else:
                self.walk(child)


def html_links(html: str) -> list[str]:
    """Every link's href in an HTML page, in page order."""
    soup = _bs4().BeautifulSoup(html, "html.parser")
    return [a["href"] for a in soup.find_all("a", href=True)]


def html_to_markdown(html: str) -> str:
    """The Markdown text of an HTML page's content."""
    bs4 = _bs4()
    soup = bs4.BeautifulSoup(html, "html.parser")
    for tag in soup(_DROPPED):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    writer = _MarkdownWriter(bs4)
    if soup.title and soup.title.string and not root.find(re.compile(r"h[1-6]")):
        writer.blocks.append(f"# {soup.title.string.strip()}")
    writer.walk(root)
    writer.flush()
    text = ""
    for k, block in enumerate(writer.blocks):  # list items and table rows stay together
        tight = k and block[:2] in ("- ", "| ") and writer.blocks[k - 1][:2] == block[:2]
        text += ("\n" if tight else "\n\n" if k else "") + block
    return text + "\n"


# ---- PDF --------------------------------------------------------------------------------

HEADING_SCALE = 1.15  # a line this much larger than the body text is a heading
HEADING_MAX_CHARS = 120
_MONOSPACE = re.compile(r"courier|mono|consol|menlo|code", re.I)


def pdf_to_markdown(data: bytes, origin: str = "PDF") -> str:
    """Text of every page; headings and code recognised by their fonts."""
    try:
        import pypdf
    except ImportError:
        raise SourceError(f"reading PDF needs pypdf: {MISSING_EXTRA}") from None
    try:
        reader = pypdf.PdfReader(BytesIO(data))
        lines: list[tuple[str, float, bool]] = []  # text, font size, monospaced
        for page in reader.pages:
            current: list[tuple[str, float, bool]] = []

            def visit(text, cm, tm, font, size, current=current):
                scale = abs(tm[3] * cm[3]) or 1.0
                mono = bool(font and _MONOSPACE.search(str(font.get("/BaseFont", ""))))
                for k, piece in enumerate(text.split("\n")):
                    if k:
                        current.append(("\n", 0.0, False))
                    if piece:
                        current.append((piece, size * scale, mono))

            page.extract_text(visitor_text=visit)
            lines += _join_lines(current)
    except Exception as exc:  # noqa: BLE001 -- pypdf raises many kinds on a damaged file
        raise SourceError(f"{origin}: cannot read the PDF ({type(exc).__name__}: {exc})") from None
    return _pdf_markdown(lines)


def _join_lines(pieces: list[tuple[str, float, bool]]) -> list[tuple[str, float, bool]]:
    lines: list[tuple[str, float, bool]] = []
    text: list[str] = []
    sizes: list[float] = []
    mono: list[bool] = []
    for piece, size, is_mono in [*pieces, ("\n", 0.0, False)]:
        if piece == "\n":
            line = "".join(text).rstrip()
            if line.strip():
                lines.append((line, max(sizes), all(mono)))
            text, sizes, mono = [], [], []
        else:
            text.append(piece)
            sizes.append(size)
            mono.append(is_mono)
    return lines


def _pdf_markdown(lines: list[tuple[str, float, bool]]) -> str:
    weights: Counter = Counter()
    for text, size, _ in lines:
        weights[round(size, 1)] += len(text)
    if not weights:
        return ""
    body = weights.most_common(1)[0][0]
    heading_sizes = sorted(
        {
            round(s, 1)
            for t, s, _ in lines
            if s >= body * HEADING_SCALE and len(t) <= HEADING_MAX_CHARS
        },
        reverse=True,
    )
    level = {size: min(k + 1, 4) for k, size in enumerate(heading_sizes)}
    out: list[str] = []
    code: list[str] = []
    for text, size, mono in lines:
        if mono:
            code.append(text)
            continue
        if code:
            out.append("```\n" + "\n".join(code) + "\n```")
            code = []
        if round(size, 1) in level and len(text) <= HEADING_MAX_CHARS:
            out.append("#" * level[round(size, 1)] + " " + text.strip())
        elif out and not out[-1].startswith(("#", "```")):
            out[-1] += "\n" + text.strip()
        else:
            out.append(text.strip())
    if code:
        out.append("```\n" + "\n".join(code) + "\n```")
    return "\n\n".join(out) + "\n"
