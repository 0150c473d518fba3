"""A polite same-site crawl: breadth first from a start URL, within depth, page and byte
limits, honouring robots.txt.

"Same site" is the start URL's scheme, host and port. Redirects are not followed
blindly: a redirect's target is queued like a link, so it too must be on the site and
allowed by robots.txt. Links to other sites are listed as skipped, never requested.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import aiohttp

from .sources import SourceError, html_links, kind_of_content_type

USER_AGENT = "autocomp-build-pack"
#: robots.txt rules that refuse every path (a site that hides its rules)
DISALLOW_ALL = ["User-agent: *", "Disallow: /"]


@dataclass
class CrawlLimits:
    max_depth: int = 2  # links followed from the start page (0: the start page only)
    max_pages: int = 50  # pages kept
    max_bytes: int = 20_000_000  # all pages together
    max_page_bytes: int = 5_000_000  # one page
    timeout_s: float = 30.0  # one request


@dataclass
class Page:
    url: str
    kind: str  # markdown, text, html, pdf
    data: bytes
    depth: int


@dataclass
class CrawlResult:
    pages: list[Page] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (url, reason)


def site(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


async def _robots(session: aiohttp.ClientSession, start: str) -> RobotFileParser:
    scheme, netloc = site(start)
    parser = RobotFileParser()
    try:
        async with session.get(f"{scheme}://{netloc}/robots.txt", allow_redirects=False) as resp:
            if resp.status == 200:
                parser.parse((await resp.text(errors="replace")).splitlines())
            elif resp.status in (401, 403) or resp.status >= 500:
                parser.parse(DISALLOW_ALL)  # the site does not let us read its rules
            else:
                parser.parse([])  # no robots.txt: nothing is disallowed
    except (aiohttp.ClientError, TimeoutError):
        parser.parse([])
    return parser


async def _read(resp: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The body, or None when it is longer than ``limit`` (not read past it)."""
    if resp.content_length is not None and resp.content_length > limit:
        return None
    chunks, size = [], 0
    async for chunk in resp.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def crawl(start: str, limits: CrawlLimits, on_page=None) -> CrawlResult:
    """Fetch ``start`` and the pages it links to on the same site, breadth first."""
    if site(start)[0] not in ("http", "https"):
        raise SourceError(f"{start}: only http and https URLs can be crawled")
    home = site(start)
    result = CrawlResult()
    total = 0
    queue = deque([(urldefrag(start)[0], 0)])
    seen = {queue[0][0]}
    timeout = aiohttp.ClientTimeout(total=limits.timeout_s)
    async with aiohttp.ClientSession(
        timeout=timeout, headers={"User-Agent": USER_AGENT}
    ) as session:
        robots = await _robots(session, start)

        def follow(link: str, depth: int) -> None:
            url = urldefrag(link)[0]
            if url in seen:
                return
            seen.add(url)
            if site(url) != home:
                result.skipped.append((url, "another site"))
            elif depth > limits.max_depth:
                result.skipped.append((url, f"deeper than max_depth {limits.max_depth}"))
            else:
                queue.append((url, depth))

        while queue:
            url, depth = queue.popleft()
            if len(result.pages) >= limits.max_pages:
                result.skipped.append((url, f"max_pages {limits.max_pages} reached"))
                continue
            if not robots.can_fetch(USER_AGENT, url):
                result.skipped.append((url, "disallowed by robots.txt"))
                continue
            try:
                async with session.get(url, allow_redirects=False) as resp:
                    if resp.status in (301, 302, 303, 307, 308) and "Location" in resp.headers:
                        result.skipped.append((url, f"redirected (HTTP {resp.status})"))
                        follow(urljoin(url, resp.headers["Location"]), depth)
                        continue
                    if resp.status != 200:
                        result.skipped.append((url, f"HTTP {resp.status}"))
                        continue
                    kind = kind_of_content_type(resp.headers.get("Content-Type", ""), url)
                    if kind is None:
                        result.skipped.append((url, "not HTML, Markdown, text or PDF"))
                        continue
                    data = await _read(resp, limits.max_page_bytes)
            except (aiohttp.ClientError, TimeoutError) as exc:
                result.skipped.append((url, f"fetch failed: {type(exc).__name__}"))
                continue
            if data is None:
                result.skipped.append((url, f"larger than max_page_bytes {limits.max_page_bytes}"))
                continue
            if total + len(data) > limits.max_bytes:
                result.skipped.append((url, f"max_bytes {limits.max_bytes} reached"))
                continue
            total += len(data)
            result.pages.append(Page(url, kind, data, depth))
            if on_page is not None:
                on_page(url)
            if kind == "html":
                for link in html_links(data.decode("utf-8", errors="replace")):
                    absolute = urljoin(url, link)
                    if site(absolute)[0] in ("http", "https"):
                        follow(absolute, depth + 1)
    return result
