"""Errors of the QEMU harness, one per stage that can fail before the boot."""


class HarnessError(Exception):
    """Base: the harness could not produce a bootable kernel."""

    stage = "harness"


class ConfigError(HarnessError):
    stage = "config"


class TreeError(HarnessError):
    stage = "tree"


class BuildError(HarnessError):
    stage = "build"


class InitramfsError(HarnessError):
    stage = "initramfs"
