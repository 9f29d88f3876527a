"""Untrusted Python source parsed without a word to the user.

The build, the gates, the span rules and the generation screen parse code and Python-repr values that come
from the samples (``ast.parse``, ``ast.literal_eval``). CPython's compiler warns about some of that text while
parsing it: ``'\\A'`` in a string literal is an invalid escape sequence (``DeprecationWarning`` up to Python
3.11, ``SyntaxWarning`` from 3.12), ``x is 1`` a ``SyntaxWarning``, and so on; such a warning names the line of
the parsed text (``<unknown>:2``), not a line of this package, so a user saw
``DeprecationWarning: invalid escape sequence '\\A'`` during ``automonitor build`` with nothing to act on. The
two functions here parse with those compile-time warnings silenced: what the sample's code would warn about
is the sample's business, never the product's output.

``warnings.catch_warnings`` changes the process's filters for the duration of the parse (up to Python 3.13
they are not per thread), which a parse of at most a sample's length makes a short window.
"""

from __future__ import annotations

import ast
import warnings
from typing import Literal, overload

#: the file name the parsed text carries in a ``SyntaxError`` (and in any warning that escaped)
SAMPLE_FILENAME = "<sample>"
#: what CPython's compiler warns about while parsing text (invalid escapes, ``is`` with a literal, ...)
COMPILE_WARNINGS: tuple[type[Warning], ...] = (SyntaxWarning, DeprecationWarning)


@overload
def parse_untrusted(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def parse_untrusted(source: str, mode: Literal["eval"]) -> ast.Expression: ...
def parse_untrusted(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.Module | ast.Expression:
    """``ast.parse(source, mode=mode)`` with the compiler's warnings (:data:`COMPILE_WARNINGS`) silenced.

    Args:
        source: Python source taken from a sample (any length; not run, only parsed).
        mode: ``exec`` (a module) or ``eval`` (one expression), as :func:`ast.parse`.
    Returns:
        The tree (an ``ast.Module`` for ``exec``, an ``ast.Expression`` for ``eval``).
    Raises:
        SyntaxError: ``source`` is no valid Python (as :func:`ast.parse`; ``filename`` :data:`SAMPLE_FILENAME`;
            a filter that turns warnings into errors, ``-W error``, is not in force during the parse).
        ValueError: ``source`` holds a NUL character.
    """
    with warnings.catch_warnings():
        for category in COMPILE_WARNINGS:
            warnings.simplefilter("ignore", category)
        tree = ast.parse(source, filename=SAMPLE_FILENAME, mode=mode)
    assert isinstance(tree, (ast.Module, ast.Expression))
    return tree


def literal_eval_untrusted(source: str) -> object:
    """``ast.literal_eval(source)`` (a Python literal: str, bytes, number, tuple, list, dict, set, bool,
    ``None``) with the compiler's warnings silenced (:func:`parse_untrusted`, mode ``eval``; leading spaces
    and tabs are stripped, as ``ast.literal_eval`` strips them).

    Raises:
        SyntaxError: ``source`` is no Python expression.
        ValueError: the expression is not a literal (a name, a call...), or ``source`` holds a NUL.
        TypeError, MemoryError, RecursionError: as :func:`ast.literal_eval` on such input.
    """
    return ast.literal_eval(parse_untrusted(source.lstrip(" \t"), mode="eval"))


__all__ = ["COMPILE_WARNINGS", "SAMPLE_FILENAME", "literal_eval_untrusted", "parse_untrusted"]
