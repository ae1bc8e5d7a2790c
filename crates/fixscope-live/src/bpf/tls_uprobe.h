/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The TLS uprobe object's kernel/user boundary (`live --tls-uprobes`, tls_uprobe.bpf.c):
 * one record per OpenSSL call that returned plaintext of a watched connection, and the
 * per-CPU counters. Like breakdown.h, the Rust side uses the types libbpf-cargo generates
 * from this file's BTF (see `fxt_abi`).
 */
#ifndef __FIXSCOPE_TLS_UPROBE_H
#define __FIXSCOPE_TLS_UPROBE_H

/* Which call (fxt_rec.call). */
enum fxt_call {
	FXT_CALL_READ = 0,  /* SSL_read / SSL_read_ex */
	FXT_CALL_WRITE = 1, /* SSL_write / SSL_write_ex */
};

/* fxt_rec.flags */
enum fxt_flag {
	FXT_FLAG_TCP = 1,       /* the call read/wrote TCP bytes itself: [seq_start, seq_end) */
	FXT_FLAG_TRUNCATED = 2, /* only the first `len` of `total` bytes were copied */
	FXT_FLAG_TCP_SPLIT = 4, /* its TCP reads/writes were not one contiguous range of one
				 * socket (another thread wrote between): not placed */
	FXT_FLAG_MEMORY_BIO = 8, /* not a call: this watched connection's socket was read or
				  * written (`call`) by a process whose OpenSSL calls are on
				  * memory BIOs; no plaintext (len 0) */
};

/* The most plaintext bytes one record carries (a larger call is truncated). */
#define FXT_MAX_COPY 65535

/*
 * One ring-buffer record, followed by `len` bytes of plaintext (the record is reserved in
 * a size class: 256, 1 KiB, 4 KiB, 16 KiB or 64 KiB of data room). It begins with ts_ns
 * like every fixscope ring record, so it joins the timestamp merge with the TC records.
 */
struct fxt_rec {
	__u64 ts_ns;     /* the call's return, bpf_ktime_get_ns() */
	__u8 saddr[16];  /* the bytes' path on the wire, network order; IPv4 in the first 4 */
	__u8 daddr[16];
	__u32 seq_start; /* FXT_FLAG_TCP: the TCP bytes the call read or wrote */
	__u32 seq_end;
	__u32 len;       /* plaintext bytes following this header */
	__u32 total;     /* bytes the call returned */
	__u32 tid;
	__u16 sport;     /* host order */
	__u16 dport;
	__u8 family;     /* 4 or 6 */
	__u8 dir;        /* enum fxs_dir */
	__u8 call;       /* FXT_CALL_* */
	__u8 flags;      /* FXT_FLAG_* */
};

/* Per-CPU counters: the indices of fxt_counters.n (user space sums the CPUs). */
/* Every return lands in exactly one of the counts after CALLS:
 * CALLS = RECORDS + RING_DROPS + NO_ENTRY + EMPTY + UNWATCHED + MEMORY_BIO + COPY_FAILED. */
enum fxt_counter {
	FXT_CNT_CALLS,       /* SSL_read/SSL_write returns seen (every process, every socket) */
	FXT_CNT_RECORDS,     /* records written (calls of watched connections with plaintext) */
	FXT_CNT_RING_DROPS,  /* records lost because the ring was full */
	FXT_CNT_NO_ENTRY,    /* returns whose entry was not seen (attached mid-call) */
	FXT_CNT_EMPTY,       /* returns with no plaintext (an error, WANT_READ, 0 bytes) */
	FXT_CNT_UNWATCHED,   /* plaintext of a connection not watched (another port, a role
			      * filtered out) */
	FXT_CNT_MEMORY_BIO,  /* plaintext on an SSL object none of whose calls touched a TCP
			      * socket: an engine feeding OpenSSL through memory BIOs */
	FXT_CNT_COPY_FAILED, /* plaintext the kernel could not read from the application */
	FXT_CNT_NR,
};

struct fxt_counters {
	__u64 n[FXT_CNT_NR];
};

/* Not used by the programs: puts the types above into the object's BTF. */
struct fxt_abi {
	struct fxt_rec rec;
	enum fxt_call call;
	enum fxt_flag flag;
	enum fxt_counter counter;
};

#endif /* __FIXSCOPE_TLS_UPROBE_H */
