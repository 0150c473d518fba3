"""The errors autocomp raises on purpose, under one base class.

``except AutocompError`` catches every one of them; anything else that escapes is a bug
(the command line prints it as one, with the traceback under ``-v``)::

    AutocompError
    ├── ConfigError     bad input: a config key, a model string, a key file (exit 2)
    │   ├── PluginError     a backend no installed plugin provides, or a plugin that broke
    │   └── FidelityUnsupported  a backend without a reader of measured programs, or a
    │                            source that is not the checkout its reader expects
    ├── BackendError    a backend cannot do its work (the sandbox cannot start, ...)
    └── RunError        a run cannot start or go on (an incorrect initial program, ...)

The LLM layer's ``LLMConfigError`` is a ``ConfigError``; the sandbox's ``SandboxError``
a ``BackendError``; replay's ``ReplayMiss`` a ``RunError``.
"""

from __future__ import annotations


class AutocompError(Exception):
    """Base of every error autocomp raises on purpose; the message is one line."""


class ConfigError(AutocompError, ValueError):
    """Bad input: the message is one line naming what is wrong."""


class PluginError(ConfigError, LookupError):
    """A backend or provider that no loaded plugin offers, or a plugin that broke its
    contract; the message names the plugin and what it lacks."""


class BackendError(AutocompError, RuntimeError):
    """A backend cannot do its work (not the candidate's fault)."""


class RunError(AutocompError, RuntimeError):
    """The run cannot start or go on (e.g. the initial program is incorrect)."""


class FidelityUnsupported(ConfigError):
    """``autocomp-core fidelity`` cannot read measured programs for this backend from this
    source: the backend has no reader, or the source is not the checkout the reader expects
    (the message names the file it looked for)."""
