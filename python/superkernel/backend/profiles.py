"""op_statistic.csv files: reading, merging and totals."""

import csv
import os

COLUMNS = (
    "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)", "Max Time(us)", "Ratio(%)"
)


def read_op_statistic(path):
    """The rows of an op_statistic.csv as dicts (numbers as int / float)."""
    with open(path, newline="") as f:
        rows = []
        for row in csv.DictReader(f):
            rows.append(
                {
                    "OP Type": row["OP Type"],
                    "Core Type": row["Core Type"],
                    "Count": int(row["Count"]),
                    "Total Time(us)": float(row["Total Time(us)"]),
                    "Min Time(us)": float(row["Min Time(us)"]),
                    "Max Time(us)": float(row["Max Time(us)"]),
                }
            )
        return rows


def total_time_us(path):
    """The sum of the Total Time(us) column."""
    return sum(row["Total Time(us)"] for row in read_op_statistic(path))


def merge_op_statistics(paths, out_path):
    """One op_statistic.csv of several (rows of one OP Type and Core Type
    added up, ratios over the merged total), in the library's format.
    Returns out_path."""
    merged = {}
    for path in paths:
        for row in read_op_statistic(path):
            key = (row["OP Type"], row["Core Type"])
            m = merged.get(key)
            if m is None:
                merged[key] = dict(row)
            else:
                m["Count"] += row["Count"]
                m["Total Time(us)"] += row["Total Time(us)"]
                m["Min Time(us)"] = min(m["Min Time(us)"], row["Min Time(us)"])
                m["Max Time(us)"] = max(m["Max Time(us)"], row["Max Time(us)"])
    grand = sum(m["Total Time(us)"] for m in merged.values())
    rows = sorted(merged.values(), key=lambda m: -m["Total Time(us)"])
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        for m in rows:
            total, count = m["Total Time(us)"], m["Count"]
            w.writerow(
                [
                    m["OP Type"],
                    m["Core Type"],
                    count,
                    f"{total:.3f}",
                    f"{m['Min Time(us)']:.3f}",
                    f"{total / count if count else 0.0:.3f}",
                    f"{m['Max Time(us)']:.3f}",
                    f"{100.0 * total / grand if grand else 0.0:.2f}",
                ]
            )
    return out_path


def write_program_profiles(named_programs, directory, default_directory):
    """Writes each (name, program)'s op_statistic.csv and trace.json to
    directory/<name>/ and one op_statistic.csv of them all to directory
    (default_directory when directory is None). Returns that file's path,
    or None when there is no program."""
    if directory is None and default_directory is None:
        raise ValueError("write_profiles: no directory given and the CompilerConfig has no profiling_dir")
    directory = os.fspath(directory if directory is not None else default_directory)
    csvs = []
    for name, program in named_programs:
        sub = os.path.join(directory, name)
        program.write_profile(sub)
        csvs.append(os.path.join(sub, "op_statistic.csv"))
    if not csvs:
        return None
    return merge_op_statistics(csvs, os.path.join(directory, "op_statistic.csv"))
