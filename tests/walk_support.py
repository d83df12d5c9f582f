"""Hand-driven paths through a model, for the tests that tell a story step by step.

``prefix_path(m, *wants)`` takes, at each step, the first enabled action whose text
starts with the next of ``wants``, so a test names its steps the way ``kmc replay``
prints them, only as far as it needs to tell them apart.  A step that is not
enabled fails the test with the actions that are."""

from __future__ import annotations


def prefix_path(m, *wants: str) -> tuple:
    """``(last state, actions taken)`` from the model's first initial state."""
    s, acts = m.init_states()[0], []
    for want in wants:
        a = next((a for a in m.actions(s) if str(a).startswith(want)), None)
        assert a is not None, f"{want} not enabled; enabled: {[str(x) for x in m.actions(s)]}"
        acts.append(a)
        s = m.next_state(s, a)
    return s, acts
