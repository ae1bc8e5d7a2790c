/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Everything that crosses the kernel/user boundary: the ring-buffer record, the
 * per-CPU counters and the constants both sides agree on. The Rust side uses the
 * types libbpf-cargo generates from this file's BTF (see `_fxs_rec` in
 * fixscope.bpf.c), so there is exactly one definition of each layout.
 */
#ifndef __FIXSCOPE_H
#define __FIXSCOPE_H

/* Sizes both sides agree on (an enum, not #defines, so they reach the BTF and the Rust side
 * reads them from the skeleton's generated types::fxs_limit). */
enum fxs_limit {
	FXS_MAX_RANGES = 8,     /* watched port ranges */
	FXS_CHUNK = 16384,      /* max payload bytes per record (power of two) */
	FXS_MAX_CHUNKS = 8,     /* records per skb: 8 * 16 KiB covers 64 KiB GSO/GRO skbs */
};

/* Which way a record goes (fxs_rec.dir). */
enum fxs_dir {
	FXS_DIR_REQUEST = 0,
	FXS_DIR_RESPONSE = 1,
};

/* Which hook took a record (fxs_rec.hook). */
enum fxs_hook {
	FXS_HOOK_INGRESS = 0,
	FXS_HOOK_EGRESS = 1,
};

/* Which side of a watched port range this host is (cfg_port_role). */
enum fxs_role {
	FXS_ROLE_SERVER = 0,
	FXS_ROLE_CLIENT = 1,
};

/* One ring-buffer record: this header, then `len` payload bytes. ts_ns comes first: the
 * user-space merge of the per-CPU rings reads every ring's records as "u64 ts_ns, ...". */
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

/* Per-CPU counters: the indices of fxs_counters.n (user space sums the CPUs). */
enum fxs_counter {
	FXS_CNT_HOOK_CALLS,          /* program invocations */
	FXS_CNT_REQUESTS_IN_RANGE,   /* TCP packets taken as requests (incl. pure ACKs) */
	FXS_CNT_RESPONSES_IN_RANGE,  /* TCP packets taken as responses (incl. pure ACKs) */
	FXS_CNT_PAYLOAD_BYTES,       /* TCP payload bytes of taken packets */
	FXS_CNT_RECORDS,             /* records written to the ring */
	FXS_CNT_RING_DROPS_REQUEST,  /* records lost because the ring was full */
	FXS_CNT_RING_DROPS_RESPONSE,
	FXS_CNT_DROPPED_BYTES,       /* payload bytes in dropped records */
	FXS_CNT_CUT_BYTES,           /* payload bytes beyond FXS_MAX_CHUNKS * FXS_CHUNK */
	FXS_CNT_WAKEUPS,             /* records submitted with BPF_RB_FORCE_WAKEUP */
	FXS_CNT_LOAD_ERRORS,         /* bpf_skb_load_bytes failures on payload */
	FXS_CNT_NR,                  /* how many counters there are */
};

/* The value of the one per-CPU array entry. */
/*
 * Adds V to the counter at P. Per-CPU counters still need an atomic add: on preemptible
 * and PREEMPT_RT kernels BPF programs run with migration disabled, not preemption, so two
 * programs (the TC hooks of two packets, a socket hook and a TC hook in a threaded softirq)
 * can interleave on one CPU, and a plain read-modify-write would lose one's increment. The
 * result is never used, so clang emits BPF_ATOMIC_ADD without BPF_FETCH, which every
 * kernel with BPF takes (BPF_FETCH needs Linux 5.12).
 */
#define FXS_ADD(P, V) ((void)__sync_fetch_and_add((P), (V)))

struct fxs_counters {
	__u64 n[FXS_CNT_NR];
	/* Not a counter (user space ignores it): ring bytes this CPU reserved since it last
	 * forced a wakeup, which decides the next one without a bpf_ringbuf_query call. */
	__u64 unwoken_bytes;
};

/*
 * Not used by the programs: a rodata variable of this type (fxs_abi in fixscope.bpf.c) puts
 * every type above into the object's BTF, from which libbpf-cargo generates the Rust types
 * (types::fxs_rec, types::fxs_dir, types::fxs_counter, ...).
 */
struct fxs_abi {
	struct fxs_rec rec;
	enum fxs_limit limit;
	enum fxs_dir dir;
	enum fxs_hook hook;
	enum fxs_role role;
	enum fxs_counter counter;
};

#endif /* __FIXSCOPE_H */
