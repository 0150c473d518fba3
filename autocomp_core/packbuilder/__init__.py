"""The knowledge builder: from a target's documents to a knowledge pack.

``autocomp-core build-pack SOURCES... --out DIR`` runs these stages, each journaled in
``DIR/.build/run.sqlite`` (the run store, so a killed build resumes without repeating an
answered LLM call):

1. ``sources``  read files and folders (Markdown, HTML, text, PDF) and crawl URLs
                (``sources.py``, ``crawl.py``)
2. ``split``    cut every document into sections at its headings (``stages.py``)
3. ``route``    an LLM sorts each section: architecture, ISA, optimization, rules,
                examples or irrelevant (``stages.py``)
4. ``extract``  ISA entries copied verbatim, each proven to occur in the sources
                (``stages.py``, ``verbatim.py``)
5. ``synthesize`` optimization and translation menus, rules, examples with trigger
                words (``synthesis.py``)
6. ``check``    with ``--backend``: every code example built by the backend, repaired
                once or dropped (``checking.py``)

then the pack is written and read back with the plugins' own loader (``packfiles.py``).
``builder.py`` runs the stages; ``journal.py`` holds the build's journal and budgets.
"""

STAGES = ("sources", "split", "route", "extract", "synthesize", "check")
