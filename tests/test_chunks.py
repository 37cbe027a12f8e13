"""How the fact passes cut their files into spatch runs: the expensive
files first and alone, the cheap ones together, so two cores finish
together and few spatch starts are paid, a small pass in a chunk per
worker; and checkpatch.pl's runs, cut by the lines the patches add."""
from __future__ import annotations

from pathlib import Path

from sem2mutex.tools.kernel_scripts import PATCH_OVERHEAD_LINES, added_lines, checkpatch_batches
from sem2mutex.tools.spatch import FILES_PER_CHUNK, LEAST_CHUNK_SECONDS, cost_ordered_chunks


def cost(chunk, costs):
    return sum(costs[f] for f in chunk)


def test_every_file_once_most_expensive_first():
    costs = {f"drivers/f{n}.c": 0.1 + (n % 7) * 0.3 for n in range(400)}
    costs["drivers/huge.c"] = 100.0  # more than a quarter share
    chunks = cost_ordered_chunks(costs, 2)
    flat = [f for c in chunks for f in c]
    assert sorted(flat) == sorted(costs)
    assert chunks[0] == ["drivers/huge.c"]  # alone, and started first
    assert all(len(c) <= FILES_PER_CHUNK for c in chunks)
    share = sum(costs.values()) / 8  # a quarter of each of 2 workers' share
    assert all(cost(c, costs) < share + 1.0 for c in chunks[1:])
    assert cost(chunks[-1], costs) <= cost(chunks[1], costs)


def test_many_cheap_files_make_few_chunks():
    costs = {f"fs/f{n}.c": 0.1 for n in range(900)}
    chunks = cost_ordered_chunks(costs, 2)
    # a cost share of 900 * 0.1 / 8 is about 113 files
    assert len(chunks) == 8
    assert [len(c) for c in chunks] == [113] * 7 + [109]


def test_small_pass_makes_a_chunk_per_worker():
    # 14 files, 3.2 s of work in all: quarter shares made six chunks and
    # paid six spatch starts for it, one chunk per worker pays two
    costs = {f"drivers/p{n}.c": 0.1 + n * 0.02 for n in range(14)}
    chunks = cost_ordered_chunks(costs, 2)
    assert sorted(f for c in chunks for f in c) == sorted(costs)
    assert len(chunks) == 2


def test_medium_pass_chunks_reach_the_least_cost():
    costs = {f"drivers/w{n}.c": 0.5 for n in range(60)}  # 30 s of work
    chunks = cost_ordered_chunks(costs, 2)
    assert sorted(f for c in chunks for f in c) == sorted(costs)
    assert [cost(c, costs) for c in chunks] == [LEAST_CHUNK_SECONDS] * 5


def test_checkpatch_runs_share_the_added_lines(tmp_path):
    """One patch adding 1,600 lines and seventy adding 13 each: two runs of
    about the same work, the big patch first, every patch once."""
    def patch(name: str, added: int) -> Path:
        path = tmp_path / name
        path.write_text("--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n" + " ctx\n-old\n"
                        + "+new\n" * added)
        return path
    big = patch("0002-core.patch", 1600)
    small = [patch(f"{n:04}-unit.patch", 13) for n in range(3, 73)]
    batches = checkpatch_batches([big, *small], jobs=2)
    assert sorted(p for b in batches for p in b) == sorted([big, *small])
    assert batches[0][0] == big
    work = [sum(PATCH_OVERHEAD_LINES + added_lines(p) for p in b) for b in batches]
    assert len(batches) == 2 and max(work) / min(work) < 1.1, work
    assert added_lines(big) == 1600
