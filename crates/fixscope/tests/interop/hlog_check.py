"""Reads an HdrHistogram interval log with PyPI's hdrhistogram and prints, per tag ("-" =
untagged lines), the merged histogram's figures as one JSON line.

Python's get_value_at_percentile rounds the rank to the nearest integer where fixscope and
Java round up; "percentiles" are Python's at fixscope's rank (ceil(q * count)), found by
asking Python for a percentile whose rounded rank is that rank; "own_percentiles" are
Python's own answers at the plain percentiles, for the record.

Usage: python hlog_check.py LOG TAG...
"""
import json
import math
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999]


def main():
    log = sys.argv[1]
    for arg in sys.argv[2:]:
        tag = None if arg == "-" else arg
        reader = HistogramLogReader(log, HdrHistogram(1, 2**43, 3))
        total = HdrHistogram(1, 2**43, 3)
        lines = 0
        while True:
            h = reader.get_next_interval_histogram()
            if h is None:
                break
            if h.get_tag() == tag:
                total.add(h)
                lines += 1
        reader.close()
        n = total.get_total_count()
        at_rank = []
        for q in QUANTILES:
            rank = max(1, math.ceil(q * n))
            at_rank.append(total.get_value_at_percentile(100.0 * (rank - 0.25) / n) if n else 0)
        print(json.dumps({
            "tag": arg,
            "lines": lines,
            "count": n,
            "min": total.get_min_value(),
            "max": total.get_max_value(),
            "percentiles": at_rank,
            "own_percentiles": [total.get_value_at_percentile(q * 100) for q in QUANTILES],
        }))


if __name__ == "__main__":
    main()
