"""Reads fixscope's --records directory with DuckDB and pyarrow (independent readers) and
prints what the Rust tests check, as one JSON object on stdout.

usage: records_check.py DIR
"""
import glob
import json
import os
import sys

import duckdb
import pyarrow.parquet as pq

root = sys.argv[1]
orders_glob = os.path.join(root, "orders", "**", "*.parquet")
messages_glob = os.path.join(root, "messages", "**", "*.parquet")
con = duckdb.connect()
# The request time as integer nanoseconds since the epoch (DuckDB keeps them: epoch_ns).
rows = con.execute(
    f"""select epoch_ns(request_time), session, sender_comp_id, target_comp_id, clordid,
               msg_type, symbol, side, account, msg_seq_num, first_response_ns, ack_ns,
               fill_ns, outcome, timed_out, cast(date as varchar)
        from read_parquet('{orders_glob}', hive_partitioning = true)
        order by request_time, clordid"""
).fetchall()
names = ["request_time_ns", "session", "sender_comp_id", "target_comp_id", "clordid",
         "msg_type", "symbol", "side", "account", "msg_seq_num", "first_response_ns",
         "ack_ns", "fill_ns", "outcome", "timed_out", "date"]
messages = con.execute(
    f"""select direction, msg_type, count(*) from read_parquet('{messages_glob}')
        group by all order by all"""
).fetchall()
first_file = sorted(glob.glob(orders_glob, recursive=True))[0]
schema = pq.read_schema(first_file)
bloom = con.execute(
    f"""select path_in_schema, bloom_filter_offset is not null, encodings, compression
        from parquet_metadata('{first_file}') where row_group_id = 0"""
).fetchall()
print(json.dumps({
    "orders": [dict(zip(names, r)) for r in rows],
    "messages": [list(m) for m in messages],
    "order_files": sorted(glob.glob(orders_glob, recursive=True)),
    "message_files": sorted(glob.glob(messages_glob, recursive=True)),
    "all_files": sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _, fs in os.walk(root) for f in fs
    ),
    "types": {f.name: str(f.type) for f in schema},
    "bloom_filter": {p: b for p, b, _, _ in bloom},
    "encodings": {p: e for p, _, e, _ in bloom},
    "compression": sorted({c for _, _, _, c in bloom}),
    "compression_of": {p: c for p, _, _, c in bloom},
}))
