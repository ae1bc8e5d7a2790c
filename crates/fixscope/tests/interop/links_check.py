"""Reads the `links` table of fixscope's --records directory with DuckDB and prints its rows
as one JSON list on stdout (an independent reader for the hop tests).

usage: links_check.py DIR
"""
import json
import os
import sys

import duckdb

root = sys.argv[1]
links_glob = os.path.join(root, "links", "**", "*.parquet")
con = duckdb.connect()
names = ["request_time_ns", "parent_session", "parent_sender_comp_id", "parent_target_comp_id",
         "parent_clordid", "msg_type", "child_time_ns", "child_session", "child_sender_comp_id",
         "child_target_comp_id", "child_clordid", "rule", "children", "hop_out_ns",
         "venue_rtt_ns", "hop_back_ns", "client_rtt_ns", "local_ack"]
rows = con.execute(
    f"""select epoch_ns(request_time), parent_session, parent_sender_comp_id,
               parent_target_comp_id, parent_clordid, msg_type, epoch_ns(child_time),
               child_session, child_sender_comp_id, child_target_comp_id, child_clordid, rule,
               children, hop_out_ns, venue_rtt_ns, hop_back_ns, client_rtt_ns, local_ack
        from read_parquet('{links_glob}', hive_partitioning = true)
        order by request_time, child_time"""
).fetchall()
print(json.dumps([dict(zip(names, r)) for r in rows]))
