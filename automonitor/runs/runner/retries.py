"""One judgement with bounded retries: exponential back-off with jitter, the server's ``Retry-After``
honoured, every request counted when it is sent, and every failure turned into an ``error`` verdict."""

from __future__ import annotations

import asyncio
import contextlib
import time
import logging
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, AsyncIterator, Callable

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from automonitor.errors import redact
from automonitor.timestamps import utcnow
from automonitor.runs import params as run_params
from automonitor.runs.monitors import Backend, Item, Judgement, PermanentError, TransientError
from automonitor.runs.runner.limiter import AIMDLimiter

log = logging.getLogger(__name__)

#: attempts per judgement when ``max_attempts`` is not given (:class:`automonitor.runs.params.RunnerSettings`)
DEFAULT_MAX_ATTEMPTS = run_params.DEFAULT_MAX_ATTEMPTS


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a judgement is retried (seconds; attempts include the first)."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0

    @classmethod
    def from_params(cls, judge_params: dict[str, Any]) -> RetryPolicy:
        """The policy of a run's judge parameters (``max_attempts``, ``backoff_initial``,
        ``backoff_max``, ``retry_after_max``; defaults for the missing ones), as validated by
        :func:`automonitor.runs.params.runner_settings`.

        Raises:
            InputError: a runner parameter of the wrong type or out of range (``field`` names it).
        """
        st = run_params.runner_settings(judge_params)
        return cls(
            max_attempts=st.max_attempts,
            backoff_initial=st.backoff_initial,
            backoff_max=st.backoff_max,
            retry_after_max=st.retry_after_max,
        )

    def wait_s(self, exc: BaseException | None, attempt_number: int) -> float:
        """Seconds to wait after failed attempt ``attempt_number`` (1-based): initial x 2^(n-1), capped
        at ``backoff_max``, plus uniform(0, initial) jitter, and never less than the server's
        ``Retry-After`` (``exc.retry_after``, capped at ``retry_after_max``)."""
        base: float = min(self.backoff_max, self.backoff_initial * 2 ** (attempt_number - 1)) + random.uniform(
            0, self.backoff_initial
        )
        ra = getattr(exc, "retry_after", None)
        if ra is not None:
            return max(base, min(float(ra), self.retry_after_max))
        return base

    def too_long(self, exc: BaseException) -> WaitTooLong | None:
        """The run-wide stop for a transient failure whose server asked to wait longer than this policy waits
        (``exc.retry_after`` over ``retry_after_max``: a 429, 529 or 503 with a long ``Retry-After``), else
        ``None``: waiting ``retry_after_max`` and sending again would only meet the same answer."""
        ra = getattr(exc, "retry_after", None)
        if not isinstance(exc, TransientError) or ra is None or float(ra) <= self.retry_after_max:
            return None
        return WaitTooLong(exc, float(ra), self.retry_after_max)


#: the run-wide code of a judge that asked (``Retry-After``) to wait longer than ``retry_after_max``
#: (:class:`WaitTooLong`): the run stops at once, its samples not judged pending
WAIT_TOO_LONG = "retry_after_over_max"


class WaitTooLong(PermanentError):
    """A server that answered a transient failure (429, 529, 503) asking to wait ``retry_after`` seconds, more
    than the run waits (``retry_after_max``, :attr:`RetryPolicy.retry_after_max`): run-wide (code
    :data:`WAIT_TOO_LONG`), so the run stops at once instead of waiting ``retry_after_max`` and meeting the
    same refusal. ``until`` is the moment the server named (UTC, when the answer came), ``kind`` the
    transient kind (``rate_limit``, ``overloaded``, ``server``)."""

    def __init__(self, exc: TransientError, retry_after: float, retry_after_max: float) -> None:
        super().__init__(str(exc), status=exc.status, code=WAIT_TOO_LONG, run_wide=True)
        self.kind, self.retry_after, self.retry_after_max = exc.kind, retry_after, retry_after_max
        self.until = utcnow() + timedelta(seconds=retry_after)

    def meta(self) -> dict[str, float | str]:
        """What a judgement's ``meta`` keeps of it (the run's failure line is made from it)."""
        return {
            "retry_after": self.retry_after,
            "retry_after_max": self.retry_after_max,
            "retry_until": self.until.strftime("%Y-%m-%d %H:%M:%S UTC"),
        }


#: transport failures (connection refused, DNS, TLS) while no call of the execution has been answered after
#: which the judge counts as unreachable: every further attempt fails at once, run-wide (fail-fast)
UNREACHABLE_AFTER = 3
NEVER_REACHED = "never_reached"
#: the run-wide code of a judge whose connections were made but dropped before any answer (reset, closed
#: mid-answer): as many such transport failures as make :data:`NEVER_REACHED`, at least one of them reached
JUDGE_DROPPED = "judge_dropped"
#: the run-wide code of a judge that answered, then stopped: :data:`LOST_AFTER` transport failures in a row
#: (connection refused, reset, DNS, TLS: no HTTP status) with no answer between them
JUDGE_LOST = "judge_lost"
#: consecutive attempts ending in a transport failure, with no answer between them, after which a judge that
#: had answered counts as lost (a server that died mid-run): new calls are not sent, the run stops ``failed``.
#: The execution raises it to 3 x its concurrency (every call in flight failing three times over).
LOST_AFTER = 12
#: ... and the streak must also have lasted this long (seconds): a burst of dropped connections on a live
#: server is answered again within it
LOST_SECONDS = 5.0
#: the run-wide code of a judge that answers only server errors: as many HTTP 5xx in a row (529 excluded: a
#: rate limit), with no answer between them, as make a judge lost (:attr:`Circuit.lost_after` calls over
#: :data:`LOST_SECONDS`)
SERVER_FAILING = "server_errors"


def _is_server_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an HTTP 5xx answer (``TransientError`` kind ``server``, status >= 500)."""
    return isinstance(exc, TransientError) and exc.kind == "server" and (exc.status or 0) >= 500


def _is_no_answer(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a call that reached the judge's address but brought back no usable answer: an HTTP
    5xx (:func:`_is_server_error`), a timeout (no complete answer within the deadline) or a malformed body
    (empty, not JSON, not the provider's shape). 429 and 529 (rate limits) are not: the limiter slows down
    for them."""
    return _is_server_error(exc) or (isinstance(exc, TransientError) and exc.kind in ("timeout", "malformed"))


def _is_transport(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a transport failure: no HTTP status (refused, reset, DNS, TLS)."""
    return isinstance(exc, TransientError) and exc.kind == "connection" and exc.status is None


def describe_failure(exc: BaseException) -> str:
    """One call's failure in words, naming its HTTP status when it had one (``HTTP 405: Method Not Allowed``,
    ``rate_limit (HTTP 429): ...``); an empty message gives the status alone, or the exception's type."""
    text = str(exc).strip()
    status = getattr(exc, "status", None)
    if isinstance(status, int) and f"HTTP {status}" not in text:
        text = f"HTTP {status}: {text}" if text else f"HTTP {status}"
    return text or type(exc).__name__


class Circuit:
    """Whether an execution has reached its judge. Until a first answer (any answer, or an HTTP error
    that is not run-wide: 401/403/404, quota), at most :data:`UNREACHABLE_AFTER` calls are in flight at once; after that many transport
    failures (``TransientError`` kind ``connection``: refused, DNS, TLS) with no answer, :meth:`check`
    raises a run-wide :class:`PermanentError` (code :data:`NEVER_REACHED`, or :data:`JUDGE_DROPPED` when one of
    them reached the judge and lost its connection before an answer: :attr:`reached`) instead of sending, and after
    that many run-wide permanent failures (401/403/404, quota) it raises the last one again, so a run
    against a closed port or an exhausted account stops within a few calls. After the first answer,
    :attr:`lost_after` transport failures in a row with no answer between them, over :data:`LOST_SECONDS`
    (a server that died mid-run: :meth:`is_lost`) make :meth:`check` raise a run-wide :class:`PermanentError` (code :data:`JUDGE_LOST`): the run stops
    ``failed`` with its remaining samples pending, instead of retrying each of them against a dead port.
    The same count of HTTP 5xx answers in a row over the same time, with no other answer between them (a
    server that fails every call: :meth:`is_failing`), raises code :data:`SERVER_FAILING` with the status;
    a 5xx between answers only restarts the count. Timeouts and malformed bodies count in that streak too
    (:func:`_is_no_answer`: a judge that never answers in time, or answers only empty or unreadable bodies,
    stops the run the same way); :attr:`answers` counts the calls that brought back an answer."""

    def __init__(self, limit: int = UNREACHABLE_AFTER, lost_after: int = LOST_AFTER) -> None:
        self.limit = limit
        self.lost_after = max(lost_after, LOST_AFTER)
        self.lost_since = 0.0  # time.monotonic() of the streak's first transport failure
        self.answered = False
        self.failures = 0
        self.reached = 0  # of ``failures``: those whose connection was made, then dropped (TransientError.reached)
        self.last: str = ""
        self.refused: list[PermanentError] = []  # run-wide permanent failures before any answer
        self.lost = 0  # transport failures in a row since the last answer (after the first one)
        self.answers = 0  # calls that brought back an answer (a judgement, whatever its outcome)
        self.failing = 0  # HTTP 5xx answers, timeouts or malformed bodies in a row since the last answer
        self.failing_since = 0.0  # time.monotonic() of the 5xx streak's first failure
        self.failing_status: int | None = None
        self.last_failing = ""
        self.last_error = ""  # the last failed call of any kind (:func:`describe_failure`): 429, 4xx, 5xx, ...
        self.last_rate_limited = False  # whether that call was refused by a rate limit (429, 529)
        self._gate = asyncio.Semaphore(limit)
        self._waiting = 0  # calls waiting for a place at the gate
        self.halt: WaitTooLong | None = None  # the server asked to wait longer than the run waits (:meth:`stop`)
        self._halted = asyncio.Event()

    def stop(self, exc: WaitTooLong) -> None:
        """Stop every further call of the execution with ``exc`` (the first one kept): :meth:`check` raises it,
        and the retries waiting in :meth:`pause` wake up at once (to meet it, not to send)."""
        if self.halt is None:
            self.halt = exc
            self._halted.set()

    async def pause(self, seconds: float) -> None:
        """Sleep ``seconds`` (a retry's back-off) or until :meth:`stop`, whichever comes first."""
        if self.halt is not None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._halted.wait(), seconds)

    def check(self) -> None:
        """Raise the run-wide failure once the judge counts as unreachable.

        Raises:
            PermanentError: ``limit`` transport failures and no answer yet, or the :class:`WaitTooLong` that
                stopped the execution (:meth:`stop`)."""
        if self.halt is not None:
            raise self.halt
        if not self.answered and len(self.refused) >= self.limit:
            last = self.refused[-1]
            raise PermanentError(str(last), status=last.status, code=last.code, run_wide=True)
        if (unreachable := self.unreachable()) is not None:
            raise unreachable
        if self.is_lost():
            raise PermanentError(
                f"{self.lost} transport failures in a row since its last answer, the last: {self.last}",
                code=JUDGE_LOST,
                run_wide=True,
            )
        if self.is_failing():
            raise PermanentError(
                f"{self.failing} calls in a row with no answer between them, the last: {self.last_failing}",
                status=self.failing_status,
                code=SERVER_FAILING,
                run_wide=True,
            )

    def unreachable(self) -> PermanentError | None:
        """The run-wide failure of a judge that answered no call, with the counts as they stand now: ``None``
        while it has answered or fewer than ``limit`` calls failed in transport; else code :data:`JUDGE_DROPPED`
        ("R of F calls reached it and lost their connection ...") when :attr:`reached`, :data:`NEVER_REACHED`
        ("F transport failures ...") otherwise. Read again once the execution has ended
        (``Execution.failure``), so the line counts the calls that were in flight when it stopped too and
        agrees with the run's ``api_calls`` (trial48: "3 of 3 calls" beside ``api_calls`` 4)."""
        if self.answered or self.failures < self.limit:
            return None
        if self.reached:  # the server took calls, then dropped them: it is there, but answers none
            return PermanentError(
                f"{self.reached} of {self.failures} calls reached it and lost their connection before an "
                f"answer, the last: {self.last}",
                code=JUDGE_DROPPED,
                run_wide=True,
            )
        return PermanentError(
            f"{self.failures} transport failures, the last: {self.last}", code=NEVER_REACHED, run_wide=True
        )

    def is_failing(self) -> bool:
        """Whether the judge answers only server errors, timeouts or malformed bodies (:func:`_is_no_answer`):
        :attr:`lost_after` in a row with no answer between them, over at least :data:`LOST_SECONDS`."""
        return self.failing >= self.lost_after and time.monotonic() - self.failing_since >= LOST_SECONDS

    def in_streak(self, exc: BaseException, since: float) -> bool:
        """Whether a sample whose attempts ended with ``exc`` and first failed at ``since``
        (:func:`time.monotonic`) failed inside the streak that stops the run: a transport failure with no
        answer anywhere since its first failure (the judge had answered before), or an HTTP 5xx once the
        5xx streak, unbroken since its first failure, stops the run (:meth:`is_failing`; a sample-specific
        5xx at low concurrency stays that sample's ``error``). Such a sample stays pending."""
        if _is_transport(exc):
            return self.answered and self.lost_before(since)
        if _is_no_answer(exc):
            return self.is_failing() and self.failing_since <= since
        return False

    def lost_before(self, since: float) -> bool:
        """Whether the current transport-failure streak (no answer since) began at or before ``since``
        (:func:`time.monotonic`): nothing has answered since that moment."""
        return self.lost > 0 and self.lost_since <= since

    def unreachable_for(self, since: float) -> bool:
        """Whether a call started at ``since`` (:func:`time.monotonic`) met an unreachable judge: none answered yet,
        the judge counts as lost (:attr:`lost_after` transport failures in a row), or nothing answered since
        ``since`` (:meth:`lost_before`)."""
        return not self.answered or self.lost >= self.lost_after or self.lost_before(since)

    def is_lost(self) -> bool:
        """Whether a judge that had answered counts as lost: :attr:`lost_after` transport failures in a row
        with no answer between them, over at least :data:`LOST_SECONDS`."""
        return self.answered and self.lost >= self.lost_after and time.monotonic() - self.lost_since >= LOST_SECONDS

    def record(self, exc: BaseException | None) -> None:
        """Note one attempt's end: ``None`` (an answer) or the exception it raised."""
        if exc is None:  # an answer (the commonest end, as the last branch below: the server is there)
            self.answers += 1
            self.lost = 0
            self.failing = 0
            if not self.answered:
                self._first_answer()
            return
        self.last_error = describe_failure(exc)
        self.last_rate_limited = isinstance(exc, TransientError) and exc.rate_limited
        if _is_transport(exc):
            if self.answered:
                if self.lost == 0:
                    self.lost_since = time.monotonic()
                self.lost += 1
            else:
                self.failures += 1
                self.reached += bool(getattr(exc, "reached", False))
            self.last = str(exc)
        elif _is_no_answer(exc):  # the address answers (or holds the call), but no usable answer came back
            if self.failing == 0:
                self.failing_since = time.monotonic()
            self.failing += 1
            self.failing_status = getattr(exc, "status", None) if _is_server_error(exc) else None
            self.last_failing = str(exc)  # its kind first (TransientError's message)
            if not (isinstance(exc, TransientError) and exc.kind == "timeout"):  # an HTTP answer: the server is there
                self.lost = 0
                self._first_answer()
        elif isinstance(exc, PermanentError) and exc.run_wide:  # a refusal of every call is no answer
            if not self.answered and exc.code not in (NEVER_REACHED, JUDGE_DROPPED):
                self.refused.append(exc)
        else:  # an HTTP error: the server is there
            self.lost = 0
            self.failing = 0
            self._first_answer()

    def _first_answer(self) -> None:
        if not self.answered:
            self.answered = True
            # open the gate at once for every call waiting there (they would otherwise pass
            # ``limit`` at a time, one round trip each: seconds of a run's start at concurrency 64)
            for _ in range(self._waiting):
                self._gate.release()

    @contextlib.asynccontextmanager
    async def gate(self) -> AsyncIterator[None]:
        """Hold one of the ``limit`` places while no call has been answered yet (no wait afterwards:
        the first answer lets every waiting call through)."""
        if self.answered:
            yield
            return
        self._waiting += 1
        try:
            await self._gate.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._gate.release()


class _Attempts:
    """The attempts at one judgement: requests sent (``calls``) and the kinds of transient failure seen
    (``kinds``, reported as ``meta.retried_after``)."""

    def __init__(
        self,
        backend: Backend,
        item: Item,
        limiter: AIMDLimiter,
        on_send: Callable[[], None],
        circuit: Circuit | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.backend, self.item, self.limiter, self.on_send = backend, item, limiter, on_send
        self.circuit = circuit
        self.policy = policy or RetryPolicy()
        self.calls = 0
        self.kinds: list[str] = []
        self.first_failed: float | None = None  # time.monotonic() of the first failed attempt

    def count_call(self) -> None:
        """Count one request when it is sent (the caller commits it at once), not when it answers."""
        self.calls += 1
        self.on_send()

    async def once(self) -> Judgement:
        """One attempt through the limiter; a rate-limit answer halves the limiter, a success grows it.

        Raises:
            TransientError / PermanentError / anything the backend raises; :class:`WaitTooLong` (and the
            circuit stopped with it) for a transient failure whose ``Retry-After`` is over the policy's
            ``retry_after_max`` (:meth:`RetryPolicy.too_long`).
        """
        try:
            async with self.limiter:
                j = await self._judge_once()
        except TransientError as exc:
            self.kinds.append(exc.kind)
            log.info("sample %s: transient %s (status %s): %s", self.item.sample_id, exc.kind, exc.status, exc)
            if exc.rate_limited:
                self.limiter.on_rate_limit()
            if (long := self.policy.too_long(exc)) is not None:
                if self.circuit is not None:
                    self.circuit.stop(long)
                raise long from exc
            raise
        self.limiter.on_success()
        if self.kinds:
            j.meta = {**j.meta, "retried_after": list(self.kinds)}
        return j

    async def _judge_once(self) -> Judgement:
        """One call to the backend, through the :class:`Circuit` when there is one (its gate only until the
        first answer; its check and record on every call, so a judge lost mid-run stops the calls)."""
        circuit = self.circuit
        if circuit is None:
            return await self.backend.judge(self.item, self.count_call)
        if circuit.answered:
            return await self._recorded(circuit)
        async with circuit.gate():
            return await self._recorded(circuit)

    async def _recorded(self, circuit: Circuit) -> Judgement:
        """One backend call after :meth:`Circuit.check`, its end noted with :meth:`Circuit.record`."""
        circuit.check()
        try:
            j = await self.backend.judge(self.item, self.count_call)
        except BaseException as exc:
            circuit.record(exc)
            if self.first_failed is None:
                self.first_failed = time.monotonic()
            raise
        circuit.record(None)
        return j

    def failed(self, exc: BaseException) -> tuple[Judgement, int]:
        """The ``error`` verdict of the last failure ``exc`` (transient after retries, permanent, or a
        backend bug, which must not lose the sample either) and the requests sent. A transient failure inside
        the streak that stops the run (:meth:`Circuit.in_streak`) is a run-wide failure instead (code
        :data:`JUDGE_LOST` or :data:`SERVER_FAILING`): the sample stays pending."""
        c = self.circuit
        if isinstance(exc, TransientError) and c is not None and self.first_failed is not None:
            if c.in_streak(exc, self.first_failed):
                code = JUDGE_LOST if _is_transport(exc) else SERVER_FAILING
                exc = PermanentError(str(exc), status=exc.status, code=code, run_wide=True)
        if isinstance(exc, TransientError):
            return Judgement(
                "error",
                raw=str(exc),
                reason=f"failed after {len(self.kinds)} attempts: {exc}",
                meta={"error_kind": exc.kind, "status": exc.status, "retried_after": self.kinds},
            ), self.calls
        if isinstance(exc, PermanentError) and exc.run_wide:
            # not this sample's verdict: the execution counts it and stops; the sample stays pending (an error
            # again when --retry-errors re-sent it: Execution._judge)
            log.info("sample %s: run-wide failure (%s)", self.item.sample_id, exc)
        else:
            log.warning("sample %s: outcome error (%s: %s)", self.item.sample_id, type(exc).__name__, exc)
        if isinstance(exc, PermanentError):
            return Judgement(
                "error",
                raw=str(exc),
                reason=f"permanent failure: {exc}",
                meta={
                    "error_kind": "permanent",
                    "status": exc.status,
                    "code": exc.code,
                    "run_wide": exc.run_wide,
                    "retried_after": self.kinds,
                    **(exc.meta() if isinstance(exc, WaitTooLong) else {}),
                },
            ), self.calls
        return Judgement(
            "error",
            raw=redact(f"{type(exc).__name__}: {exc}")[:2000],
            reason=f"unexpected {type(exc).__name__} in the backend",
            meta={"error_kind": "internal", "retried_after": self.kinds},
        ), self.calls


async def judge_with_retries(
    backend: Backend,
    item: Item,
    limiter: AIMDLimiter,
    policy: RetryPolicy,
    on_send: Callable[[], None],
    circuit: Circuit | None = None,
) -> tuple[Judgement, int]:
    """Judge ``item`` with at most ``policy.max_attempts`` attempts; returns (judgement, requests sent).

    ``on_send()`` is called as each request is sent. Transient failures are retried after
    :meth:`RetryPolicy.wait_s`; never raises for backend failures (they become the ``error`` outcome),
    only ``asyncio.CancelledError``. ``circuit`` (shared by an execution's workers) stops the attempts
    once the judge counts as unreachable (:class:`Circuit`), or once a server asked to wait longer than
    ``policy.retry_after_max`` (:class:`WaitTooLong`: no retry, the waits of the other samples cut short).
    """
    attempts = _Attempts(backend, item, limiter, on_send, circuit, policy)
    # the first attempt runs outside tenacity: the common case costs no retry machinery
    try:
        return await attempts.once(), attempts.calls
    except asyncio.CancelledError:
        raise
    except TransientError as exc:
        if policy.max_attempts <= 1:
            return attempts.failed(exc)
        await _pause(circuit, policy.wait_s(exc, 1))
    except Exception as exc:  # noqa: BLE001
        return attempts.failed(exc)
    return await _retry(attempts, policy)


async def _pause(circuit: Circuit | None, seconds: float) -> None:
    """A retry's back-off: ``seconds``, cut short when the circuit stops (:meth:`Circuit.pause`)."""
    if circuit is None:
        await asyncio.sleep(seconds)
    else:
        await circuit.pause(seconds)


async def _retry(attempts: _Attempts, policy: RetryPolicy) -> tuple[Judgement, int]:
    """Attempts 2..max_attempts under tenacity's ``AsyncRetrying`` (transient failures only)."""

    def wait(rs: RetryCallState) -> float:
        # tenacity numbers its own attempts from 1; ours started one earlier (the fast path)
        return policy.wait_s(rs.outcome.exception() if rs.outcome else None, rs.attempt_number + 1)

    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(policy.max_attempts - 1),
            wait=wait,
            retry=retry_if_exception_type(TransientError),
            reraise=True,
            sleep=lambda s: _pause(attempts.circuit, s),
        ):
            with attempt:
                return await attempts.once(), attempts.calls
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001
        return attempts.failed(exc)
    raise AssertionError("unreachable")  # pragma: no cover
