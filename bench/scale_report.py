#!/usr/bin/env python3
"""bench/scale_report.py — the scaling table of `make bench BENCH_SCALE=1` (issue 14).

Reads the driver's JSON of the same workload run at several N (one file per N), prints
for each phase the cost per item (µs, the cblite side's median) at each N — per document
for every phase but attachments (a fixed 1,000): view_query's 101 queries return rows in
proportion to N, so its cost is divided by N, not by the queries —, the ratio of
the largest N's cost to the smallest's (the goal: within 1.3x) next to the same growth of
the raw-SQLite baseline (what the storage engine itself pays as data outgrows the caches:
random reads of a 1,000,000-document file miss where 10,000 documents stay in cache), the
ratio to the baseline at each N, and the database size per document; writes the same as JSON.

    scale_report.py OUT.json RESULT_N1.json RESULT_N2.json ...
"""
import json
import sys

GOAL = 1.3


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: scale_report.py OUT.json RESULT.json...")
    out_path, paths = argv[1], argv[2:]
    results = sorted((json.load(open(p)) for p in paths), key=lambda r: r["n"])
    ns = [r["n"] for r in results]
    phases = [p for p in results[0]["phases"] if all(p in r["phases"] for r in results)]

    report = {"n": ns, "goal_largest_over_smallest": GOAL, "phases": {}, "db_bytes_per_doc": {}}
    header = "phase        " + "".join(f"{'µs/item N=' + format(n, ','):>20}" for n in ns) \
        + f"{'largest/smallest':>18}" + f"{'baseline':>12}" + "".join(f"{'ratio N=' + format(n, ','):>18}" for n in ns)
    print(header)
    for p in phases:
        per_item = [r["phases"][p]["cblite_ms"] * 1000.0 / (r["n"] if p == "view_query" else r["phases"][p]["count"])
                    for r in results]
        ratios = [r["phases"][p]["ratio"] for r in results]
        base_per_item = [r["phases"][p]["baseline_ms"] * 1000.0 / (r["n"] if p == "view_query" else r["phases"][p]["count"])
                         for r in results]
        growth = per_item[-1] / per_item[0] if per_item[0] > 0 else float("nan")
        base_growth = base_per_item[-1] / base_per_item[0] if base_per_item[0] > 0 else float("nan")
        flag = "" if growth <= GOAL else "  (over the goal)"
        print(f"{p:<13}" + "".join(f"{v:>20.2f}" for v in per_item) + f"{growth:>17.2f}x" + f"{base_growth:>11.2f}x"
              + "".join(f"{v:>17.2f}x" for v in ratios) + flag)
        report["phases"][p] = {"us_per_item": per_item, "largest_over_smallest": growth,
                               "baseline_us_per_item": base_per_item, "baseline_largest_over_smallest": base_growth,
                               "ratio_to_baseline": ratios}
    sizes = [r["db_bytes"] / r["n"] for r in results]
    base_sizes = [r["baseline_db_bytes"] / r["n"] for r in results]
    print("size/doc     " + "".join(f"{v:>19.0f}B" for v in sizes)
          + f"{sizes[-1] / sizes[0]:>17.2f}x" + f"{base_sizes[-1] / base_sizes[0]:>11.2f}x" + "".join(f"{a / b:>17.2f}x" for a, b in zip(sizes, base_sizes)))
    report["db_bytes_per_doc"] = {"cblite": sizes, "baseline": base_sizes}
    with open(out_path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main(sys.argv)
