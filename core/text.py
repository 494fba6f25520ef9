"""Wording helpers for the messages users read (errors, warnings, status lines)."""

from __future__ import annotations

__all__ = ["with_article", "exception_text"]


def with_article(word: str) -> str:
    """``word`` with its indefinite article: ``"an annotation"``, ``"a profile"``, ``"an alignment"``."""
    return f"{'an' if str(word)[:1].lower() in 'aeiou' else 'a'} {word}"


def exception_text(exc: BaseException, limit: int = 120) -> str:
    """``"TypeError: what it said"`` on one line (line breaks escaped), cut to ``limit`` characters of message.

    For wrapping a library's exception into Marginalia's one-line errors: its text may quote a file's
    content, line breaks included.
    """
    text = str(exc)[:limit].replace("\r", "\\r").replace("\n", "\\n")
    return f"{type(exc).__name__}: {text}"
