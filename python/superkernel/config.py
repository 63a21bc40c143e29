"""CompilerConfig: how the torch.compile backend compiles and runs."""

import os

from . import _lib
from .program import parse_executor


class CompilerConfig:
    """Settings of a superkernel backend (superkernel.get_backend).

    executor       how each compiled program runs: "auto" (JIT-compiled
                   super kernels, interpreted when compiling fails), "jit",
                   "interp", "eager" (super kernels off: every op its own
                   launch), "reference" or "default" ($SK_EXECUTOR)
    num_threads    cores of the backend's team, 1..1024 (None:
                   torch.get_num_threads())
    options        default super-kernel options for every scope
                   ("key=value:...", docs/options.md); a scope's own options
                   win key by key
    profiling_dir  None, or a directory: programs are compiled with
                   profiling on, and write_profiles() (also called at exit)
                   writes each program's op_statistic.csv and trace.json to
                   a subdirectory, plus one op_statistic.csv of them all
    watchdog_ms    the library's watchdog, an int (0: its default,
                   $SK_WATCHDOG_MS or 60000; negative: wait forever)
    torch_bits     a bool. True (the default): only ATen ops the library
                   computes with exactly torch eager's bits run in it.
                   False also maps ATen ops whose library contract is its
                   own fixed-order arithmetic, within docs/ops.md's
                   tolerance of torch but not its bits: softmax over the
                   last dimension (the library's softmax) and
                   scaled_dot_product_attention's cases the library's
                   attention computes (backend/attention.py)

    Every setting is checked when the config is made and again by
    validate() (get_backend and export call it, so a setting changed
    afterwards is checked before any compile): a bad one raises TypeError /
    ValueError naming it and what it accepts, never an error at the
    model's first call.
    """

    def __init__(
        self, executor="auto", num_threads=None, options="", profiling_dir=None, watchdog_ms=0, torch_bits=True
    ):
        self.executor = executor
        self.num_threads = num_threads
        self.options = options
        self.profiling_dir = profiling_dir
        self.watchdog_ms = watchdog_ms
        self.torch_bits = torch_bits
        self.validate()

    def validate(self):
        """Raises TypeError / ValueError naming the bad setting; returns self."""
        from .schema import validate_options

        if not isinstance(self.executor, str):
            raise TypeError(f"CompilerConfig.executor: expected a str, got {type(self.executor).__name__}")
        parse_executor(self.executor)  # the library's names; its error lists them
        if self.num_threads is not None:
            what = "CompilerConfig.num_threads (None: torch.get_num_threads())"
            self.num_threads = _lib.as_int(self.num_threads, what, 1, _lib.SK_TEAM_MAX_CORES)
        if not isinstance(self.options, str):
            raise TypeError(f"CompilerConfig.options: expected a str, got {type(self.options).__name__}")
        validate_options(self.options)  # the library names the bad key or value (encode: a NUL)
        if self.profiling_dir is not None:
            try:
                self.profiling_dir = os.fspath(self.profiling_dir)
            except TypeError:
                raise TypeError(
                    f"CompilerConfig.profiling_dir: expected None or a path, got {type(self.profiling_dir).__name__}"
                ) from None
            _lib.encode(os.fsencode(self.profiling_dir), "CompilerConfig.profiling_dir")
        what = "CompilerConfig.watchdog_ms (milliseconds; 0: the default, negative: none)"
        self.watchdog_ms = _lib.as_int(self.watchdog_ms, what)
        if not isinstance(self.torch_bits, bool):
            raise TypeError(
                f"CompilerConfig.torch_bits: expected a bool (True: torch eager's bits only), got {self.torch_bits!r}"
            )
        return self

    def __repr__(self):
        return (
            f"CompilerConfig(executor={self.executor!r}, num_threads={self.num_threads!r}, "
            f"options={self.options!r}, profiling_dir={self.profiling_dir!r}, watchdog_ms={self.watchdog_ms!r}, "
            f"torch_bits={self.torch_bits!r})"
        )
