"""Reports people look at: the HTML report of a run or a folder of runs, and the live
dashboard (``autocomp-core serve``).

``data``: what a run's journal says, read-only, as one JSON-ready dict; ``page``: the
self-contained page that renders it (``assets/`` is the page's own code, ``vendor/`` the
JavaScript libraries shipped with it); ``server``: the aiohttp dashboard.
"""
