"""API keys: environment variables first, then a user key file outside the repository.

The key file is TOML with the environment variable names as keys::

    OPENAI_API_KEY = "sk-..."
    ANTHROPIC_API_KEY = "sk-ant-..."

It must be private to its owner (``chmod 600``); a file readable by the group or others
is refused. Keys are never logged: every message that may carry one goes through
``redact``.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path

import platformdirs

from .errors import LLMConfigError

#: the key file when none is configured: keys.toml in the user's config dir
#: (``~/.config/autocomp`` on Linux, or ``$XDG_CONFIG_HOME/autocomp``)
KEY_FILE_NAME = "keys.toml"
REDACTED = "[REDACTED]"

# Everything ever loaded as a key in this process, so any message can be scrubbed.
_known_secrets: set[str] = set()
# Shapes of common API keys, scrubbed even when we never loaded them.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-)?[A-Za-z0-9_\-]{8,}|key-[A-Za-z0-9]{16,}|AIza[A-Za-z0-9_\-]{30,})"
)  # OpenAI, Anthropic, generic, Google API keys


def remember_secret(value: str | None) -> None:
    if value and len(value) >= 6 and value != "EMPTY":
        _known_secrets.add(value)


def redact(text: str) -> str:
    """Replace every known key and anything shaped like one."""
    for secret in sorted(_known_secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)


def redact_processor(logger, method_name, event_dict):
    """A structlog processor that scrubs keys from every string value of a log event."""
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = redact(value)
    return event_dict


def key_file_path(configured: str | None) -> Path:
    if configured:
        return Path(os.path.expanduser(configured))
    return platformdirs.user_config_path("autocomp") / KEY_FILE_NAME


def load_key_file(configured: str | None) -> dict[str, str]:
    """Keys from the key file; {} when the default file does not exist."""
    path = key_file_path(configured)
    if not path.exists():
        if configured:
            raise LLMConfigError(f"key file {path} does not exist")
        return {}
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise LLMConfigError(
            f"key file {path} is accessible by other users (mode "
            f"{stat.S_IMODE(mode):o}); run: chmod 600 {path}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LLMConfigError(f"key file {path} is not valid TOML: {exc}") from None
    keys = {str(k): str(v) for k, v in data.items() if isinstance(v, (str, int))}
    for value in keys.values():
        remember_secret(value)
    return keys


class KeyStore:
    """Looks a key up by environment variable name: the environment, then the key file."""

    def __init__(self, key_file: str | None = None):
        self._file_keys = load_key_file(key_file)

    def get(self, name: str) -> str | None:
        value = os.environ.get(name) or self._file_keys.get(name)
        remember_secret(value)
        return value or None

    def source(self, name: str) -> str | None:
        """Where a key comes from ("environment" or "key file"), never the key itself."""
        if os.environ.get(name):
            return "environment"
        if self._file_keys.get(name):
            return "key file"
        return None
