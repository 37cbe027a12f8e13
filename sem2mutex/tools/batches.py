"""Work cut into batches for a pool of workers that should finish together."""
from __future__ import annotations


def heaviest_first(weights: dict[str, float], jobs: int,
                   least: float = 0.0) -> list[list[str]]:
    """The names of WEIGHTS in batches, the heaviest first, for JOBS workers.

    Each batch weighs about a quarter of a worker's share, so a worker that
    drew light batches takes more of them and the workers finish together;
    a name heavier than that is a batch of its own, started first, so it
    never runs alone at the end while the other workers idle.  LEAST is
    the weight a batch reaches at least when a batch has a cost of its own
    (a program to start): a small run is cut into a batch per worker, not
    into four per worker.
    """
    ordered = sorted(weights, key=lambda name: (-weights[name], name))
    total = sum(weights.values())
    target = max(total / max(1, jobs * 4), min(least, total / max(1, jobs)))
    batches: list[list[str]] = []
    current: list[str] = []
    weight = 0.0
    for name in ordered:
        current.append(name)
        weight += weights[name]
        if weight >= target:
            batches.append(current)
            current, weight = [], 0.0
    if current:
        batches.append(current)
    return batches
