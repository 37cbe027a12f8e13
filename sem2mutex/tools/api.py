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
