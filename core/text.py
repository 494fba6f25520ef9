"""Wording helpers for the messages users read (errors, warnings, status lines)."""

from __future__ import annotations

__all__ = ["with_article"]


def with_article(word: str) -> str:
    """``word`` with its indefinite article: ``"an annotation"``, ``"a profile"``, ``"an alignment"``."""
    return f"{'an' if str(word)[:1].lower() in 'aeiou' else 'a'} {word}"
