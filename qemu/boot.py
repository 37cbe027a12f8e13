"""Boot a kernel in qemu-system-x86_64 and capture its serial console.

TCG by default: on the machines this project runs on /dev/kvm opens but a
KVM guest hangs before the kernel starts.  `-no-reboot` turns the reboot
that /init asks for into a QEMU exit (a tinyconfig kernel has no ACPI
power-off), and `panic=-1` makes a panicking kernel reboot, hence exit, at
once instead of sitting until the timeout.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

QEMU_BINARY = "qemu-system-x86_64"
ACCELERATORS = ("tcg", "kvm")
DEFAULT_KERNEL_ARGS = ("console=ttyS0", "panic=-1")
KILL_GRACE_S = 5


@dataclass(frozen=True)
class BootSpec:
    kernel: Path
    initrd: Path
    console_log: Path
    accel: str = "tcg"
    timeout_s: int = 300
    memory_mb: int = 512
    cpus: int = 1
    kernel_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class MachineOutcome:
    ended_by_itself: bool  # QEMU exited on its own before the timeout
    timed_out: bool
    exit_code: int | None
    seconds: float
    command: list[str] = field(default_factory=list)


def qemu_command(spec: BootSpec) -> list[str]:
    if spec.accel not in ACCELERATORS:
        raise ValueError(f"accelerator must be one of {ACCELERATORS}, not {spec.accel!r}")
    cmd = [QEMU_BINARY, "-accel", spec.accel]
    if spec.accel == "kvm":
        cmd += ["-cpu", "host"]
    cmd += [
        "-m", str(spec.memory_mb),
        "-smp", str(spec.cpus),
        "-nographic", "-no-reboot",
        "-kernel", str(spec.kernel),
        "-initrd", str(spec.initrd),
        "-append", " ".join(DEFAULT_KERNEL_ARGS + tuple(spec.kernel_args)),
    ]
    return cmd


def boot(spec: BootSpec) -> MachineOutcome:
    """Run QEMU until it exits or the timeout; the console goes to a file."""
    cmd = qemu_command(spec)
    spec.console_log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(spec.console_log, "wb") as console:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=console,
                                stderr=subprocess.STDOUT)
        try:
            exit_code = proc.wait(timeout=spec.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = _stop(proc)
    seconds = time.monotonic() - start
    return MachineOutcome(ended_by_itself=not timed_out, timed_out=timed_out,
                          exit_code=exit_code, seconds=seconds, command=cmd)


def _stop(proc: subprocess.Popen) -> int | None:
    proc.terminate()
    try:
        return proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
