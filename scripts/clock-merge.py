#!/usr/bin/env python3
"""Merge published sets into one calibration set for the clock's fit.

  scripts/clock-merge.py OUT.csv SET.csv[:SPLIT[+SPLIT...]] ...

Copies every row of each SET (only the listed splits, when given) verbatim,
except its `split` column, which becomes `calibration` (the split that
`slowpipe clock --fit` fits on); the row's former split is kept in front of
its notes as "[was SPLIT] ". Row ids must be unique across the sets.
"""
import csv
import sys


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out_path, specs = argv[1], argv[2:]
    header, rows, seen = None, [], set()
    for spec in specs:
        path, _, only = spec.partition(":")
        keep = set(only.split("+")) if only else None
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields = [h.strip() for h in reader.fieldnames]
            if header is None:
                header = fields
            elif fields != header:
                sys.exit(f"{path}: columns differ from the first set's")
            for row in reader:
                row = {k.strip(): v for k, v in row.items()}
                if keep is not None and row["split"] not in keep:
                    continue
                if row["id"] in seen:
                    sys.exit(f"{path}: row id {row['id']} already used")
                seen.add(row["id"])
                row["notes"] = f"[was {row['split']}] " + row["notes"]
                row["split"] = "calibration"
                rows.append(row)
    with open(out_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{out_path}: {len(rows)} rows from {len(specs)} sets")


if __name__ == "__main__":
    main(sys.argv)
