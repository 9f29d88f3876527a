"""Length matched within a pair, with the longer side balanced: where a source offers several misbehavior and
benign responses to the same request, pair them so that the two sides of a pair are close in length *and*,
over the source, the misbehavior side is the longer one about as often as the benign side.

Where a source has only one response per side and request there is nothing to choose; where it has
several (several models' trajectories of one scenario, several rollouts of one problem, several models'
refusals of one prompt), :meth:`RequestGroup.assignment` picks, for one request, the disjoint pairing with the least summed cost

    r(m, b) = log((1 + len m) / (1 + len b))        (signed: > 0 when the misbehavior side is longer)
    cost(m, b) = |r| - bias * sign(r) + penalty(m, b)

(``min(len(mis), len(ben))`` pairs: an optimal assignment, Kuhn-Munkres via
``scipy.optimize.linear_sum_assignment``); ``penalty`` keeps a source's own preferences (a style it avoids
on the benign side, a pair it cannot form) ahead of length. With ``bias = 0`` this is the pairing with the
least summed gap, which can still leave one side longer in most pairs (why that matters:
``docs/explanation/hard.md``, "Length matched within a pair"). :func:`balanced_pairings` therefore
chooses one ``bias`` per source, a Lagrange multiplier on the count of pairs whose misbehavior side is
longer (``bias > 0`` makes such a pair cheaper by ``bias``, ``bias < 0`` dearer): the first of
:data:`BIASES` (smallest first) whose pairings leave the two directions equal in number, within one; where
no bias gets there (every choice a source offers points one way), the one that comes closest. A request with one response per side keeps its pair
whatever the bias; deterministic for a given input.
"""

from __future__ import annotations

import math
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")

#: a penalty at least this large means "never pair these two" (the pairing leaves such a pair out)
FORBIDDEN = 1e6
#: the biases :func:`balanced_pairings` tries, in this order (0 first, then by size, + before -), in units
#: of ``|log length ratio|`` (0.01: a 1% longer side; 5: a side 150 times as long)
BIASES: tuple[float, ...] = (
    0.0,
    *(
        sign * size
        for size in (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0)
        for sign in (1, -1)
    ),
)


def length_ratio(a: str | int, b: str | int) -> float:
    """The signed ``log((1 + len a) / (1 + len b))`` (a text or a length in characters): 0 for equal
    lengths, +log 2 = 0.69 when ``a`` is twice as long as ``b``, -0.69 when half."""
    la = a if isinstance(a, int) else len(a)
    lb = b if isinstance(b, int) else len(b)
    return math.log((1 + la) / (1 + lb))


class RequestGroup(Generic[T]):
    """One request's candidates with their signed ratio and penalty matrices, for pairing at several biases."""

    def __init__(
        self,
        mis: Sequence[T],
        ben: Sequence[T],
        length: Callable[[T], int],
        penalty: Callable[[T, T], float] | None,
    ) -> None:
        import numpy as np

        self.mis, self.ben = list(mis), list(ben)
        lm = [length(m) for m in self.mis]
        lb = [length(b) for b in self.ben]
        self.ratio = np.array([[length_ratio(x, y) for y in lb] for x in lm], dtype=float).reshape(len(lm), len(lb))
        self.pen = np.array(
            [[penalty(m, b) if penalty else 0.0 for b in self.ben] for m in self.mis], dtype=float
        ).reshape(len(lm), len(lb))
        #: a request with one candidate per side has nothing to choose (its pair is the same at every bias)
        self.fixed = len(self.mis) <= 1 and len(self.ben) <= 1

    def assignment(self, bias: float) -> list[tuple[int, int]]:
        """The ``(i, j)`` index pairs of the least-cost pairing at ``bias`` (forbidden pairs left out)."""
        if not self.mis or not self.ben:
            return []
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        cost = np.abs(self.ratio) - bias * np.sign(self.ratio) + self.pen
        rows, cols = linear_sum_assignment(cost)
        return [(int(i), int(j)) for i, j in sorted(zip(rows, cols)) if self.pen[i, j] < FORBIDDEN]

    def direction(self, idx: list[tuple[int, int]]) -> int:
        """(pairs whose misbehavior side is longer) - (pairs whose benign side is longer) among ``idx``."""
        import numpy as np

        return sum(int(np.sign(self.ratio[i, j])) for i, j in idx)

    def cost(self, idx: list[tuple[int, int]]) -> float:
        """The summed ``|r| + penalty`` of the index pairs ``idx`` (bias left out)."""
        return float(sum(abs(self.ratio[i, j]) + self.pen[i, j] for i, j in idx))


def balanced_pairings(
    groups: Sequence[tuple[Sequence[T], Sequence[T]]],
    length: Callable[[T], int],
    penalty: Callable[[T, T], float] | None = None,
) -> list[list[tuple[T, T]]]:
    """The pairs of each of one source's requests (``groups``: ``(mis, ben)`` candidates per request, in
    order), the count of pairs whose misbehavior side is longer brought as close as the choices allow to the
    count whose benign side is longer, over the whole source, at the least added gap found:

    1. every request with a choice is paired (:meth:`RequestGroup.assignment`) at one common bias, the first of
       :data:`BIASES` (0 first: the least-gap pairing) that balances the directions within one, else the one
       that comes closest;
    2. where that leaves more than one pair of difference (requests alike in their lengths switch together
       at a bias), one request at a time switches to its pairing at another bias: the switch that narrows the
       difference at the least added summed cost per pair it moves, the earlier request on ties, until none
       narrows it.

    Requests with one candidate per side keep their pair and count with it.

    Args:
        groups: per request, the candidate responses of each label (any objects).
        length: an object's length in characters.
        penalty: an extra cost of pairing ``m`` with ``b``, as in :class:`RequestGroup`.
    Returns:
        one list of pairs per group, in the order of ``groups`` (see :meth:`RequestGroup.assignment`).
    """
    built = [RequestGroup(m, b, length, penalty) for m, b in groups]
    plan = [g.assignment(0.0) for g in built]
    free = [k for k, g in enumerate(built) if not g.fixed]

    def total(p: list[list[tuple[int, int]]]) -> int:
        return sum(g.direction(a) for g, a in zip(built, p))

    for bias in BIASES[1:]:
        if abs(total(plan)) <= 1:  # 1: an odd count cannot do better
            break
        trial = list(plan)
        for k in free:
            trial[k] = built[k].assignment(bias)
        if abs(total(trial)) < abs(total(plan)):
            plan = trial
    if abs(total(plan)) > 1:
        options: dict[int, list[list[tuple[int, int]]]] = {}
        for k in free:  # each request's distinct pairings over the biases, in first-seen order
            alts = [built[k].assignment(b) for b in BIASES]
            options[k] = [a for i, a in enumerate(alts) if a not in alts[:i]]
        while abs(d := total(plan)) > 1:
            moves = []
            for k in free:
                now = built[k].direction(plan[k])
                for n, alt in enumerate(options[k]):
                    narrowed = abs(d) - abs(d - now + built[k].direction(alt))
                    if narrowed > 0:
                        extra = built[k].cost(alt) - built[k].cost(plan[k])
                        moves.append((extra / narrowed, k, n))
            if not moves:
                break
            _, k, n = min(moves)
            plan[k] = options[k][n]
    return [[(g.mis[i], g.ben[j]) for i, j in a] for g, a in zip(built, plan)]
