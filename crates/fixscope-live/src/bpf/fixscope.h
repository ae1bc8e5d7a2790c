/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Everything that crosses the kernel/user boundary: the ring-buffer record, the
 * per-CPU counters and the constants both sides agree on. The Rust side uses the
 * types libbpf-cargo generates from this file's BTF (see `_fxs_rec` in
 * fixscope.bpf.c), so there is exactly one definition of each layout.
 */
#ifndef __FIXSCOPE_H
#define __FIXSCOPE_H

#define FXS_MAX_RANGES 8      /* watched port ranges */
#define FXS_CHUNK 16384       /* max payload bytes per record (power of two) */
#define FXS_MAX_CHUNKS 8      /* records per skb: 8 * 16 KiB covers 64 KiB GSO/GRO skbs */

#define FXS_DIR_REQUEST 0
#define FXS_DIR_RESPONSE 1

#define FXS_HOOK_INGRESS 0
#define FXS_HOOK_EGRESS 1

#define FXS_ROLE_SERVER 0
#define FXS_ROLE_CLIENT 1

/* One ring-buffer record: this header, then `len` payload bytes. */
struct fxs_rec {
	__u64 ts_ns;      /* bpf_ktime_get_ns() (CLOCK_MONOTONIC), same for all chunks of a skb */
	__u8 saddr[16];   /* network order; IPv4 uses the first 4 bytes */
	__u8 daddr[16];
	__u32 seq;        /* host order: sequence number of the first payload byte (of the SYN if SYN) */
	__u32 ack;        /* host order: acknowledgement number (valid with the ACK flag) */
	__u32 len;        /* payload bytes following this header */
	__u32 offset;     /* offset of this chunk within the skb's TCP payload */
	__u32 cut;        /* payload bytes after this chunk that were not captured (last chunk only) */
	__u32 seg_len;    /* whole TCP payload length of the skb */
	__u32 ifindex;
	__u16 sport;      /* host order */
	__u16 dport;
	__u8 family;      /* 4 or 6 */
	__u8 dir;         /* FXS_DIR_* */
	__u8 flags;       /* TCP flags (FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10) */
	__u8 hook;        /* FXS_HOOK_* */
};

/* Per-CPU counters (one array entry; user space sums the CPUs). */
struct fxs_counters {
	__u64 hook_calls;          /* program invocations */
	__u64 requests_in_range;   /* TCP packets taken as requests (incl. pure ACKs) */
	__u64 responses_in_range;  /* TCP packets taken as responses (incl. pure ACKs) */
	__u64 payload_bytes;       /* TCP payload bytes of taken packets */
	__u64 records;             /* records written to the ring */
	__u64 ring_drops_request;  /* records lost because the ring was full */
	__u64 ring_drops_response;
	__u64 dropped_bytes;       /* payload bytes in dropped records */
	__u64 cut_bytes;           /* payload bytes beyond FXS_MAX_CHUNKS * FXS_CHUNK */
	__u64 wakeups;             /* records submitted with BPF_RB_FORCE_WAKEUP */
	__u64 load_errors;         /* bpf_skb_load_bytes failures on payload */
};

#endif /* __FIXSCOPE_H */
