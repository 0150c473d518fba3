"""The contract between the core and its plugins: the ``Backend`` a plugin implements and the
types it speaks (``backend``), the plugin registry (``plugins``), knowledge packs (``packs``),
the rules every verdict obeys (``validity``), the machine's slots (``resources``) and the
pieces of a static screen (``screening``)."""
