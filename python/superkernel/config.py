"""CompilerConfig: how the torch.compile backend compiles and runs."""

import os

from .program import parse_executor


class CompilerConfig:
    """Settings of a superkernel backend (superkernel.get_backend).

    executor       how each compiled program runs: "auto" (JIT-compiled
                   super kernels, interpreted when compiling fails), "jit",
                   "interp", "eager" (super kernels off: every op its own
                   launch), "reference" or "default" ($SK_EXECUTOR)
    num_threads    cores of the backend's team (None: torch.get_num_threads())
    options        default super-kernel options for every scope
                   ("key=value:...", docs/options.md); a scope's own options
                   win key by key
    profiling_dir  None, or a directory: programs are compiled with
                   profiling on, and write_profiles() (also called at exit)
                   writes each program's op_statistic.csv and trace.json to
                   a subdirectory, plus one op_statistic.csv of them all
    watchdog_ms    the library's watchdog (0: its default)
    """

    def __init__(self, executor="auto", num_threads=None, options="", profiling_dir=None, watchdog_ms=0):
        self.executor = executor
        self.num_threads = num_threads
        self.options = options
        self.profiling_dir = profiling_dir
        self.watchdog_ms = watchdog_ms

    def validate(self):
        """Raises ValueError / TypeError naming the bad setting."""
        from .schema import validate_options

        if not isinstance(self.executor, str):
            raise TypeError(f"CompilerConfig.executor: expected a str, got {type(self.executor).__name__}")
        parse_executor(self.executor)  # the library's names; its error lists them
        if self.num_threads is not None and (
            not isinstance(self.num_threads, int) or isinstance(self.num_threads, bool) or self.num_threads < 1
        ):
            raise ValueError(f"CompilerConfig.num_threads: {self.num_threads!r}; expected None or an int >= 1")
        if not isinstance(self.options, str):
            raise TypeError(f"CompilerConfig.options: expected a str, got {type(self.options).__name__}")
        validate_options(self.options)
        if self.profiling_dir is not None:
            self.profiling_dir = os.fspath(self.profiling_dir)
        return self

    def __repr__(self):
        return (
            f"CompilerConfig(executor={self.executor!r}, num_threads={self.num_threads!r}, "
            f"options={self.options!r}, profiling_dir={self.profiling_dir!r})"
        )
