"""Generating candidate pairs with a generator model, as the paper's recipes do: tasks and incentives
(:mod:`.tasks`, :mod:`.incentives`), the job and its lease (:mod:`.job`, :mod:`.engine`), the model call
(:mod:`.caller`), the filters and static screen (:mod:`.filters`, :mod:`.screen`), the sandbox that runs
model-written code (:mod:`.sandbox`, bubblewrap) and the stored candidates (:mod:`.candidates`).
Import the modules themselves; this package re-exports nothing."""

__all__: list[str] = []
