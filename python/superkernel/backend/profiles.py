"""Profiles of several programs: each program's op_statistic.csv and
trace.json, and one op_statistic.csv of them all. The rows come from the
library as records (Program.op_statistics) and are merged and written by
it (write_op_statistics): nothing here reads the files back."""

import os

from ..program import write_op_statistics


def write_program_profiles(named_programs, directory, default_directory):
    """Writes each (name, program)'s op_statistic.csv and trace.json to
    directory/<name>/ and one op_statistic.csv of them all to directory
    (default_directory when directory is None). Returns that file's path,
    or None when there is no program."""
    if directory is None and default_directory is None:
        raise ValueError("write_profiles: no directory given and the CompilerConfig has no profiling_dir")
    directory = os.fspath(directory if directory is not None else default_directory)
    rows, any_program = [], False
    for name, program in named_programs:
        program.write_profile(os.path.join(directory, name))
        rows += program.op_statistics()
        any_program = True
    if not any_program:
        return None
    return write_op_statistics(os.path.join(directory, "op_statistic.csv"), rows)
