"""Helpers of the knowledge-builder tests: the documentation folder, a folder served over
HTTP on 127.0.0.1, a PDF made on the spot, the scripted server's model string."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from autocomp_core.testing.llm_server import LLMTestServer

DOCS = Path(__file__).parent / "docs"
BIG_PAGE_BYTES = 300_000


class Site:
    """A folder served over HTTP on 127.0.0.1; every requested path is recorded."""

    def __init__(self, root: Path, redirects: dict[str, str] | None = None) -> None:
        self.root = root
        self.redirects = redirects or {}
        self.paths: list[str] = []
        site = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                site.paths.append(self.path)
                if self.path in site.redirects:
                    self.send_response(302)
                    self.send_header("Location", site.redirects[self.path])
                    self.end_headers()
                    return
                super().do_GET()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_pdf(path: Path) -> Path:
    """A small PDF: rules and an ISA section, headings in a larger font, code in Courier."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    for title, paragraphs, code in [
        (
            "Vecto programming rules",
            [
                "Every program must define solution(xs) and return a plain int.",
                "A program must never modify its input list in place.",
                "Code must call only the standard built-ins of the language.",
                "Every plan must state which rows of local memory it uses.",
            ],
            None,
        ),
        (
            "Synchronization instructions",
            [
                "vsync() waits until every queued command of both units has finished.",
                "vfence(row) waits until the last command that touches that row has finished.",
            ],
            "vload(0, a, 64);\nvsync();",
        ),
    ]:
        pdf.set_font("Helvetica", "B", 18)
        pdf.cell(0, 12, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for paragraph in paragraphs:
            pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
        if code:
            pdf.set_font("Courier", "", 10)
            pdf.multi_cell(0, 5, code, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def model_of(server: LLMTestServer) -> str:
    return f"openai-compatible@{server.openai_base_url}::scripted"
