"""The errors a user can cause or meet, and the exit status of each.

Every failure that reaches the command line is one of these: cli.main()
prints its message as one line on stderr and exits with its exit_code.
Anything else escaping is a bug in sem2mutex, and shows a traceback.

    0  everything asked for passed
    1  a stage ran and failed (ToolFailure)
    2  bad input, found before any long work (BadInput)
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_TOOL_FAILURE = 1
EXIT_BAD_INPUT = 2


class Sem2mutexError(Exception):
    """Base of every error sem2mutex reports; the message is one line."""

    exit_code = EXIT_TOOL_FAILURE

    def one_line(self, limit: int = 400) -> str:
        """The message on one line: the command line prints nothing else."""
        text = " ".join(str(self).split())
        return text if len(text) <= limit else text[:limit - 3] + "..."


# ------------------------------------------------------------ bad input (2)


class BadInput(Sem2mutexError):
    """The command line, the tree or a file given is not usable."""

    exit_code = EXIT_BAD_INPUT


class NotAKernelTree(BadInput):
    """TREE is missing, not a directory, or not a Linux tree."""


class TreeUnsupported(BadInput):
    """The tree can be audited but cannot take what was asked (the series,
    a boot): it lacks the files the core patches edit, or is of another era."""


class MissingTool(BadInput):
    """A program sem2mutex needs is not installed (spatch, git, ...)."""


class BadOption(BadInput):
    """An option's value is wrong (a --dir outside the tree, -j 0, ...)."""


class BadOutputDir(BadInput):
    """OUTDIR cannot be written, or is inside the tree."""


class BadDecisions(BadInput):
    """The --decisions file cannot be read or is malformed."""


class BadSeries(BadInput):
    """A series directory given to a proof stage is incomplete."""


# --------------------------------------------------------- tool failure (1)


class ToolFailure(Sem2mutexError):
    """A stage ran and failed; the message says where to look."""

    exit_code = EXIT_TOOL_FAILURE


class SpatchError(ToolFailure):
    """spatch itself failed (bad SmPL, a python error), not a C parse error."""


class GitError(ToolFailure):
    """A git command failed."""


class GrepError(ToolFailure):
    """grep could not read the tree."""


class SeriesError(ToolFailure):
    """The series cannot be produced."""


class RewriteError(ToolFailure):
    """The rewrite could not be applied (spatch misbehaved on a file)."""


class CoreApiError(ToolFailure):
    """A core patch cannot be applied to this tree: its files are not in
    the state the patch expects (applied out of order, edited by hand)."""


class AlreadyApplied(CoreApiError):
    """The core patch is applied already."""


class AnchorError(CoreApiError):
    """A line or comment a core patch is anchored on is not in the tree."""


class DiffError(ToolFailure):
    """diff failed."""


class SeriesDoesNotApply(ToolFailure):
    """git am stopped at a patch of the series."""


class VerifyError(ToolFailure):
    """The verification could not run (git or make broken)."""


class BootError(ToolFailure):
    """The boot stage could not run (cache broken, harness failed to start)."""


class BenchError(ToolFailure):
    """The benchmark kernel ran but its log cannot be read."""
