"""The runner's circuit (:class:`automonitor.runs.runner.retries.Circuit`): at most ``limit`` calls in flight
until the judge first answers, then none held back, including those already waiting at the gate."""

from __future__ import annotations

import asyncio

from automonitor.runs.monitors import TransientError
from automonitor.runs.runner.retries import Circuit


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _calls(circuit: Circuit, n: int, hold: asyncio.Event, entered: list[int]) -> list[asyncio.Task[None]]:
    async def call(i: int) -> None:
        async with circuit.gate():
            entered.append(i)
            await hold.wait()

    return [asyncio.create_task(call(i)) for i in range(n)]


def test_the_first_answer_lets_every_waiting_call_through_at_once() -> None:
    async def go() -> None:
        circuit, hold, entered = Circuit(limit=3), asyncio.Event(), []
        tasks = _calls(circuit, 64, hold, entered)
        await _settle()
        assert len(entered) == 3  # nothing answered yet: three places
        circuit.record(None)  # the first answer, while the three still hold their places
        await _settle()
        assert sorted(entered) == list(range(64))  # not three more per round trip
        hold.set()
        await asyncio.gather(*tasks)

    asyncio.run(go())


def test_transport_failures_before_an_answer_keep_the_gate_at_its_limit() -> None:
    async def go() -> None:
        circuit, hold, entered = Circuit(limit=3), asyncio.Event(), []
        tasks = _calls(circuit, 10, hold, entered)
        await _settle()
        circuit.record(TransientError("connection", "refused"))
        await _settle()
        assert len(entered) == 3 and not circuit.answered
        hold.set()
        await asyncio.gather(*tasks)
        assert len(entered) == 10

    asyncio.run(go())
