"""The semaphore API and what each name becomes: the one copy of the table.

The design notes' API mapping, as data.  Python modules import it; the
semantic patches that rename calls read it as JSON from $SEM2MUTEX_API
(api_environment()), or from the rewrite plan that already carries it,
so no rule spells the table out again.

    python3 -m sem2mutex.tools.api    prints the JSON, for running a rule
                                      by hand: SEM2MUTEX_API="$(...)" spatch ...
"""
from __future__ import annotations

import json

# Old name -> the counting API name, in the order semaphore.c documents them.
COUNTING_NAMES: dict[str, str] = {
    "down": "down_sem",
    "down_interruptible": "down_sem_interruptible",
    "down_killable": "down_sem_killable",
    "down_trylock": "down_sem_trylock",
    "down_timeout": "down_sem_timeout",
    "up": "up_sem",
}
OLD_NAMES: tuple[str, ...] = tuple(COUNTING_NAMES)
NEW_NAMES: tuple[str, ...] = tuple(COUNTING_NAMES.values())

# Old name -> the mutex call a binary semaphore's call becomes.  down_trylock()
# returns 0 on success and mutex_trylock() 1: the rewrite inverts the test.
# down_timeout() has no mutex equivalent, so it is not here.
MUTEX_CALLS: dict[str, str] = {
    "down": "mutex_lock",
    "down_interruptible": "mutex_lock_interruptible",
    "down_killable": "mutex_lock_killable",
    "down_trylock": "mutex_trylock",
    "up": "mutex_unlock",
}
MUTEX_INITIALISERS: dict[str, str] = {
    "sema_init": "mutex_init",
    "__SEMAPHORE_INITIALIZER": "__MUTEX_INITIALIZER",
    "DEFINE_SEMAPHORE": "DEFINE_MUTEX",
}

# How many arguments each call of the API takes, in every era: a call
# with another number is of some other function or macro of that name.
ARGUMENTS: dict[str, int] = {
    "down": 1, "down_interruptible": 1, "down_killable": 1, "down_trylock": 1,
    "down_timeout": 2, "up": 1, "sema_init": 2, "init_MUTEX": 1, "init_MUTEX_LOCKED": 1,
    "__SEMAPHORE_INITIALIZER": 2,
}

# Kernel functions whose pointer arguments are locks of another type (a
# spinlock_t, an rwlock_t) or an atomic_t: the address of a struct
# semaphore passed to one would not build, so an address given to one is
# no semaphore's (the escape check otherwise suspects every semaphore
# member of that name when it cannot type `&x->lock` in
# spin_lock(&x->lock)).  Not the names code of these trees defines over
# the semaphore API: 2.6's XFS has mutex_lock() and mutex_init() macros on
# a semaphore, its i810_dma.c `#define down_write down` (for 2.4 kernels).
OTHER_LOCK_CALLS: frozenset[str] = frozenset({
    # spinlock_t
    "assert_spin_locked", "raw_spin_is_locked", "raw_spin_lock", "raw_spin_lock_bh",
    "raw_spin_lock_init", "raw_spin_lock_irq", "raw_spin_lock_irqsave",
    "raw_spin_lock_nested", "raw_spin_trylock", "raw_spin_trylock_bh",
    "raw_spin_trylock_irq", "raw_spin_trylock_irqsave", "raw_spin_unlock",
    "raw_spin_unlock_bh", "raw_spin_unlock_irq", "raw_spin_unlock_irqrestore",
    "raw_spin_unlock_wait", "spin_is_locked", "spin_lock", "spin_lock_bh", "spin_lock_init",
    "spin_lock_irq", "spin_lock_irqsave", "spin_lock_nested", "spin_trylock",
    "spin_trylock_bh", "spin_trylock_irq", "spin_trylock_irqsave", "spin_unlock",
    "spin_unlock_bh", "spin_unlock_irq", "spin_unlock_irqrestore", "spin_unlock_wait",
    # rwlock_t
    "read_lock", "read_lock_bh", "read_lock_irq", "read_lock_irqsave", "read_trylock",
    "read_unlock", "read_unlock_bh", "read_unlock_irq", "read_unlock_irqrestore",
    "rwlock_init", "write_lock", "write_lock_bh", "write_lock_irq", "write_lock_irqsave",
    "write_trylock", "write_unlock", "write_unlock_bh", "write_unlock_irq",
    "write_unlock_irqrestore",
    # atomic_t
    "atomic_add", "atomic_dec", "atomic_inc", "atomic_read", "atomic_set", "atomic_sub",
})

# For the reports: old call, its mutex form, its counting form.
MUTEX_SPELLING = {**{old: f"{new}()" for old, new in MUTEX_CALLS.items()},
                  "down_trylock": "!mutex_trylock() (inverted!)",
                  "down_timeout": "(no mutex equivalent)"}

API_ENV = "SEM2MUTEX_API"


def api_table() -> dict:
    return {"counting": COUNTING_NAMES, "mutex": MUTEX_CALLS,
            "mutex_initialisers": MUTEX_INITIALISERS}


def api_environment() -> dict[str, str]:
    """The environment a semantic patch that renames calls needs."""
    return {API_ENV: json.dumps(api_table(), sort_keys=True)}


if __name__ == "__main__":
    print(json.dumps(api_table(), sort_keys=True))
