"""The LLM layer: the engine's only way to talk to language models.

- ``client``: ``LLMClient`` (retries, limits, classification, cost, usage),
  ``default_models``, ``check_models``
- ``settings``: ``LLMSettings``, the ``[llm]`` config section
- ``modelstring``: ``provider::model``, ``provider@URL::model`` and aliases
- ``providers`` / ``builtin_providers``: ``ProviderSpec`` and the OpenAI, Anthropic,
  OpenAI-compatible and embedded local providers (registered through the plugin hook)
- ``keys``: API keys from the environment or a private key file; redaction
- ``limits``, ``errors``, ``prices`` (+ ``price_lists/*.toml``), ``usage``
- ``parsing``: plans, code and structured edits out of responses
- ``types``: requests and responses shared with the engine
"""
