#!/usr/bin/python3
"""sem2mutex: audit and convert the struct semaphore users of a Linux tree.

Run ./convert.py --help for the options; the stages live in sem2mutex/.
Debian's own Python, the one install-deps installs: through a python3
found on PATH (a pyenv shim, say) every start costs 0.4 s more.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sem2mutex.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
