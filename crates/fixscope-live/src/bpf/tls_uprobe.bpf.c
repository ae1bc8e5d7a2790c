// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fixscope live --tls-uprobes: the plaintext of watched TLS connections from the
 * application's own OpenSSL calls, without keys. A separate object from fixscope.bpf.c:
 * loaded and attached only with --tls-uprobes, with its own ring.
 *
 * - uprobe on SSL_read, SSL_read_ex, SSL_write, SSL_write_ex (libssl 1.1 and 3.x, or the
 *   library --tls-lib names): the call's SSL*, buffer and (_ex) byte-count pointer, by
 *   thread, for every process that maps the library.
 * - fexit/tcp_sendmsg_locked, fexit/tcp_recvmsg (or, on kernels that refuse BPF
 *   trampolines, the socket tracepoints): a TCP write/read made by a thread inside such
 *   a call, on a watched connection: the socket's flow and the TCP byte range, read as
 *   the --breakdown hooks read them. This is what filters in the kernel: a call that
 *   touched no watched socket is never written out.
 * - uretprobe on the four: the call returned n > 0 bytes: one ring record with the flow,
 *   the TCP range (if any) and the plaintext. A read served from a record OpenSSL had read
 *   before touches no socket: the flow the SSL* last had for reads is used.
 *
 * - A process whose calls are on memory BIOs (an event-loop engine: Node.js, Netty's
 *   tcnative) does its socket I/O outside them: its next TCP read or write of each
 *   watched connection and direction is noted once (FXT_FLAG_MEMORY_BIO), so user space
 *   can say exactly why that connection's records get no calls.
 *
 * User space ties the bytes to the TLS records the TC programs saw, by the TCP range, and
 * times them by those records (fixscope-tls/src/uprobe.rs): the call's own time is only
 * the merge's order.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "fixscope.h"
#include "tls_uprobe.h"
#include "watch_filter.h"
#include "sock_watch.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MSG_PEEK 0x2
#define MSG_ERRQUEUE 0x2000

/* Not used by the programs: puts the shared types into the skeleton (see tls_uprobe.h). */
const volatile struct fxt_abi fxt_abi = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23); /* resized by the loader */
} fxt_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fxt_counters);
} fxt_counters SEC(".maps");

/* An OpenSSL call in progress, by pid_tgid. */
struct fxt_active {
	__u64 ssl;
	__u64 buf;
	__u64 count_ptr; /* _ex: where the call stores its byte count (0: the return value) */
	struct fxs_sock_flow flow;
	__u32 seq_start;
	__u32 seq_end;
	__u32 send_start; /* tracepoint path: write_seq at the write's first pass */
	__u8 call;
	__u8 tcp; /* 0: no TCP I/O seen yet, 1: one contiguous range, 2: not one range */
	__u8 send_pending;
	__u8 any_tcp; /* the call read or wrote a TCP socket, watched or not */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct fxt_active);
} fxt_active SEC(".maps");

/* The flow each SSL* had for each kind of call: a read that touches no socket (served
 * from a record read before) belongs to its SSL*'s connection. Only watched connections
 * are here. */
struct fxt_ssl_key {
	__u64 ssl;
	__u32 tgid;
	__u32 call;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fxt_ssl_key);
	__type(value, struct fxs_sock_flow);
} fxt_ssl_flows SEC(".maps");

/* SSL objects (with their process) one of whose calls touched a TCP socket, watched or
 * not. A call with plaintext, no socket and no flow is on a memory BIO only when its SSL*
 * never touched one: a read served from a record read before did, in an earlier call. */
struct fxt_ssl_id {
	__u64 ssl;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fxt_ssl_id);
	__type(value, __u8);
} fxt_ssl_socketed SEC(".maps");

/* Processes (tgid) with an OpenSSL call on a memory BIO, and whether any was seen at all
 * (read first: the TCP hooks of every other process pay one load). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} fxt_bio_tgids SEC(".maps");

__u32 fxt_any_memory_bio = 0;

/* The watched connections' directions already noted as a memory-BIO process's. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fxs_sock_flow);
	__type(value, __u8);
} fxt_bio_flows SEC(".maps");

static __always_inline struct fxt_counters *counters(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&fxt_counters, &zero);
}

static __always_inline int enter(__u64 ssl, __u64 buf, __u64 count_ptr, __u8 call)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fxt_active a = {.ssl = ssl, .buf = buf, .count_ptr = count_ptr, .call = call};
	bpf_map_update_elem(&fxt_active, &id, &a, BPF_ANY);
	return 0;
}

/* int SSL_write(SSL *ssl, const void *buf, int num) */
SEC("uprobe")
int fxt_write_entry(struct pt_regs *ctx)
{
	return enter(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), 0, FXT_CALL_WRITE);
}

/* int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written) */
SEC("uprobe")
int fxt_write_ex_entry(struct pt_regs *ctx)
{
	return enter(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM4(ctx), FXT_CALL_WRITE);
}

/* int SSL_read(SSL *ssl, void *buf, int num) */
SEC("uprobe")
int fxt_read_entry(struct pt_regs *ctx)
{
	return enter(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), 0, FXT_CALL_READ);
}

/* int SSL_read_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes) */
SEC("uprobe")
int fxt_read_ex_entry(struct pt_regs *ctx)
{
	return enter(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM4(ctx), FXT_CALL_READ);
}

/* A TCP read or write outside any OpenSSL call: when its process's calls are on memory
 * BIOs and the socket is watched, one record says so for the connection's direction (a
 * record the ring had no room for is tried again on the next I/O). */
static __always_inline void note_memory_bio(struct sock *sk, const int read)
{
	if (!fxt_any_memory_bio)
		return;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&fxt_bio_tgids, &tgid))
		return;
	struct fxs_sock_flow f = {};
	if (!sock_watched(sk, read, &f) || bpf_map_lookup_elem(&fxt_bio_flows, &f))
		return;
	struct fxt_rec *r = bpf_ringbuf_reserve(&fxt_ring, sizeof(*r), 0);
	if (!r)
		return;
	__u8 yes = 1;
	bpf_map_update_elem(&fxt_bio_flows, &f, &yes, BPF_ANY);
	__builtin_memset(r, 0, sizeof(*r));
	__builtin_memcpy(r->saddr, f.saddr, 16);
	__builtin_memcpy(r->daddr, f.daddr, 16);
	r->sport = f.sport;
	r->dport = f.dport;
	r->family = f.family;
	r->dir = f.dir;
	r->call = read ? FXT_CALL_READ : FXT_CALL_WRITE;
	r->flags = FXT_FLAG_MEMORY_BIO;
	r->tid = (__u32)bpf_get_current_pid_tgid();
	r->ts_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, 0);
}

/* A TCP read or write of N bytes ending at END by this thread: part of its OpenSSL call's
 * range if one is in progress and the socket is watched. */
static __always_inline void tcp_io(struct sock *sk, const int read, __u32 end, __u32 n)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fxt_active *a = bpf_map_lookup_elem(&fxt_active, &id);
	if (!a) {
		note_memory_bio(sk, read);
		return;
	}
	a->any_tcp = 1;
	if (a->call != (read ? FXT_CALL_READ : FXT_CALL_WRITE))
		return;
	struct fxs_sock_flow f;
	if (!sock_watched(sk, read, &f))
		return;
	__u32 start = end - n;
	if (a->tcp == 0) {
		a->flow = f;
		a->seq_start = start;
		a->seq_end = end;
		a->tcp = 1;
	} else if (a->tcp == 1 && a->seq_end == start && a->flow.sport == f.sport &&
		   a->flow.dport == f.dport) {
		a->seq_end = end;
	} else {
		a->tcp = 2;
	}
}

/* tcp_sendmsg_locked(sk, msg, size) returned the bytes it queued; its fexit still runs
 * under the socket lock, so write_seq has moved by exactly those (see breakdown.bpf.c). */
SEC("fexit/tcp_sendmsg_locked")
int fxt_send_exit(unsigned long long *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	int n = (int)ctx[3];
	if (n <= 0)
		return 0;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	tcp_io(sk, 0, BPF_CORE_READ(tp, write_seq), n);
	return 0;
}

/* A read's TCP bytes end where it stopped (read_end, sock_watch.h). */
SEC("fexit/tcp_recvmsg")
int fxt_recv_exit(unsigned long long *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	__u64 ret, flags;
	recvmsg_exit_args(ctx, &ret, &flags);
	int n = (int)ret;
	if (n <= 0 || (flags & (MSG_PEEK | MSG_ERRQUEUE)))
		return 0;
	tcp_io(sk, 1, read_end(sk), n);
	return 0;
}

/*
 * The same TCP I/O from the socket tracepoints (Linux >= 6.12), for kernels that refuse
 * fentry/fexit; the loader uses these only when those do not load. Reads:
 * sock_recv_length(sk, ret, flags) fires as sock_recvmsg returns, the fexit's point.
 */
SEC("tp_btf/sock_recv_length")
int fxt_tp_recv(unsigned long long *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	int n = (int)ctx[1];
	__u64 flags = ctx[2];
	if (n <= 0 || (flags & (MSG_PEEK | MSG_ERRQUEUE)))
		return 0;
	tcp_io(sk, 1, read_end(sk), n);
	return 0;
}

/* Writes, part 1: tcp_sendmsg_locked's tracepoint fires under the socket lock before each
 * pass of its copy loop queues anything: the first pass's write_seq is the write's first
 * byte. */
SEC("tp_btf/tcp_sendmsg_locked")
int fxt_tp_locked(unsigned long long *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fxt_active *a = bpf_map_lookup_elem(&fxt_active, &id);
	if (!a || a->call != FXT_CALL_WRITE || a->send_pending)
		return 0;
	struct tcp_sock *tp = (struct tcp_sock *)ctx[0];
	a->send_start = BPF_CORE_READ(tp, write_seq);
	a->send_pending = 1;
	return 0;
}

/* Writes, part 2: sock_send_length(sk, ret, 0) as sock_sendmsg returns the bytes queued;
 * exactly those must have been queued since part 1 (else another thread wrote between,
 * after release_sock: not one range). */
SEC("tp_btf/sock_send_length")
int fxt_tp_send(unsigned long long *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fxt_active *a = bpf_map_lookup_elem(&fxt_active, &id);
	struct sock *sk = (struct sock *)ctx[0];
	if (!a) {
		note_memory_bio(sk, 0);
		return 0;
	}
	if (a->call != FXT_CALL_WRITE || !a->send_pending)
		return 0;
	a->send_pending = 0;
	int n = (int)ctx[1];
	if (n <= 0)
		return 0;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 end = BPF_CORE_READ(tp, write_seq);
	if (end - a->send_start != (__u32)n) {
		a->any_tcp = 1;
		struct fxs_sock_flow f;
		if (sock_watched(sk, 0, &f))
			a->tcp = 2;
		return 0;
	}
	tcp_io(sk, 0, end, n);
	return 0;
}

/* The record in a size class of CAP bytes of data room: reserve, copy, submit. */
#define FXT_EMIT(CAP)                                                                      \
	do {                                                                               \
		struct {                                                                   \
			struct fxt_rec h;                                                  \
			__u8 data[CAP];                                                    \
		} *r = bpf_ringbuf_reserve(&fxt_ring, sizeof(*r), 0);                      \
		if (!r) {                                                                  \
			FXS_ADD(&c->n[FXT_CNT_RING_DROPS], 1);                             \
			return 0;                                                          \
		}                                                                          \
		__u32 copy = h.len & ((CAP)-1);                                            \
		h.len = copy;                                                              \
		__builtin_memcpy(&r->h, &h, sizeof(h));                                    \
		if (bpf_probe_read_user(r->data, copy, (const void *)buf)) {               \
			bpf_ringbuf_discard(r, 0);                                         \
			FXS_ADD(&c->n[FXT_CNT_COPY_FAILED], 1);                            \
			return 0;                                                          \
		}                                                                          \
		bpf_ringbuf_submit(r, 0);                                                  \
	} while (0)

SEC("uretprobe")
int fxt_return(struct pt_regs *ctx)
{
	long ret = PT_REGS_RC(ctx);
	struct fxt_counters *c = counters();
	if (!c)
		return 0;
	FXS_ADD(&c->n[FXT_CNT_CALLS], 1);
	__u64 id = bpf_get_current_pid_tgid();
	struct fxt_active *ap = bpf_map_lookup_elem(&fxt_active, &id);
	if (!ap) {
		FXS_ADD(&c->n[FXT_CNT_NO_ENTRY], 1);
		return 0;
	}
	struct fxt_active a = *ap;
	bpf_map_delete_elem(&fxt_active, &id);
	__u64 n = 0;
	if (a.count_ptr) {
		if (ret == 1 && bpf_probe_read_user(&n, sizeof(n), (const void *)a.count_ptr)) {
			FXS_ADD(&c->n[FXT_CNT_COPY_FAILED], 1);
			return 0;
		}
		if (ret != 1)
			n = 0;
	} else if (ret > 0) {
		n = ret;
	}
	if (n == 0) {
		FXS_ADD(&c->n[FXT_CNT_EMPTY], 1);
		return 0;
	}
	struct fxt_ssl_key key = {.ssl = a.ssl, .tgid = id >> 32, .call = a.call};
	struct fxt_ssl_id ssl_id = {.ssl = a.ssl, .tgid = id >> 32};
	if (a.any_tcp) {
		__u8 yes = 1;
		bpf_map_update_elem(&fxt_ssl_socketed, &ssl_id, &yes, BPF_ANY);
	}
	struct fxt_rec h = {};
	if (a.tcp) {
		bpf_map_update_elem(&fxt_ssl_flows, &key, &a.flow, BPF_ANY);
	} else {
		struct fxs_sock_flow *f = bpf_map_lookup_elem(&fxt_ssl_flows, &key);
		if (!f) {
			/* No watched connection's call — or one on no socket at all. */
			if (!a.any_tcp && !bpf_map_lookup_elem(&fxt_ssl_socketed, &ssl_id)) {
				FXS_ADD(&c->n[FXT_CNT_MEMORY_BIO], 1);
				__u32 tgid = id >> 32;
				__u8 yes = 1;
				bpf_map_update_elem(&fxt_bio_tgids, &tgid, &yes, BPF_ANY);
				fxt_any_memory_bio = 1;
			} else
				FXS_ADD(&c->n[FXT_CNT_UNWATCHED], 1);
			return 0;
		}
		a.flow = *f;
	}
	__builtin_memcpy(h.saddr, a.flow.saddr, 16);
	__builtin_memcpy(h.daddr, a.flow.daddr, 16);
	h.sport = a.flow.sport;
	h.dport = a.flow.dport;
	h.family = a.flow.family;
	h.dir = a.flow.dir;
	h.call = a.call;
	h.seq_start = a.seq_start;
	h.seq_end = a.seq_end;
	h.flags = a.tcp == 1 ? FXT_FLAG_TCP : a.tcp == 2 ? FXT_FLAG_TCP_SPLIT : 0;
	h.total = n > 0xffffffff ? 0xffffffff : (__u32)n;
	h.len = n > FXT_MAX_COPY ? FXT_MAX_COPY : (__u32)n;
	if (n > FXT_MAX_COPY)
		h.flags |= FXT_FLAG_TRUNCATED;
	h.tid = (__u32)id;
	h.ts_ns = bpf_ktime_get_ns();
	__u64 buf = a.buf;
	if (h.len < 256)
		FXT_EMIT(256);
	else if (h.len < 1024)
		FXT_EMIT(1024);
	else if (h.len < 4096)
		FXT_EMIT(4096);
	else if (h.len < 16384)
		FXT_EMIT(16384);
	else
		FXT_EMIT(65536);
	FXS_ADD(&c->n[FXT_CNT_RECORDS], 1);
	return 0;
}
