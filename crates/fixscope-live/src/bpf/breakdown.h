/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The breakdown object's kernel/user boundary (`--breakdown`, breakdown.bpf.c): the
 * socket-call record and the per-CPU counters. Like fixscope.h, the Rust side uses the
 * types libbpf-cargo generates from this file's BTF (see `fxb_abi`).
 */
#ifndef __FIXSCOPE_BREAKDOWN_H
#define __FIXSCOPE_BREAKDOWN_H

/* Which socket call a record is (fxb_rec.call). */
enum fxb_call {
	FXB_CALL_READ = 0,  /* tcp_recvmsg returned len > 0; ts_ns is its return */
	FXB_CALL_WRITE = 1, /* tcp_sendmsg queued len bytes; ts_ns is its entry */
};

/*
 * One ring-buffer record. It begins with ts_ns like every fixscope ring record, so it can
 * join a timestamp merge with the TC records.
 */
struct fxb_rec {
	__u64 ts_ns;      /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 woken_ns;   /* reads: the thread's last wakeup before the read (0: none seen) */
	__u64 on_cpu_ns;  /* reads: when the thread then got a CPU */
	__u8 saddr[16];   /* the bytes' path on the wire, network order; IPv4 in the first 4 */
	__u8 daddr[16];
	__u32 seq;        /* TCP sequence number of the first byte read or written */
	__u32 len;        /* bytes read / queued */
	__u32 tid;        /* kernel thread id of the caller */
	__u16 sport;      /* host order */
	__u16 dport;
	__u8 family;      /* 4 or 6 */
	__u8 dir;         /* enum fxs_dir of fixscope.h: 0 request, 1 response */
	__u8 call;        /* FXB_CALL_* */
	__u8 pad;
};

/* Per-CPU counters: the indices of fxb_counters.n (user space sums the CPUs). */
enum fxb_counter {
	FXB_CNT_RECV_CALLS,   /* tcp_recvmsg returns seen (every socket of the host) */
	FXB_CNT_SEND_CALLS,   /* tcp_sendmsg entries seen (every socket of the host) */
	FXB_CNT_SCHED_CALLS,  /* sched_switch + sched_wakeup runs (every thread of the host) */
	FXB_CNT_READS,        /* read records written */
	FXB_CNT_WRITES,       /* write records written */
	FXB_CNT_RING_DROPS,   /* records lost because the breakdown ring was full */
	FXB_CNT_SKIPPED,      /* watched calls not recorded: MSG_PEEK/ERRQUEUE reads, writes
			       * whose entry was not seen */
	FXB_CNT_NR,
};

struct fxb_counters {
	__u64 n[FXB_CNT_NR];
};

/* Not used by the programs: puts the types above into the object's BTF. */
struct fxb_abi {
	struct fxb_rec rec;
	enum fxb_call call;
	enum fxb_counter counter;
};

#endif /* __FIXSCOPE_BREAKDOWN_H */
