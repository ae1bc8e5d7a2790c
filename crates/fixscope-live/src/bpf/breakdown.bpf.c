// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fixscope --breakdown: the watched application's socket calls and its threads'
 * scheduling, for the in-host breakdown of an order's latency (docs/architecture.md,
 * "In-host breakdown"). A separate object from fixscope.bpf.c: loaded and attached only
 * with --breakdown, with its own ring.
 *
 * - fexit/tcp_recvmsg: a read that returned ret > 0 bytes of a watched connection: seq of
 *   its first byte = tp->copied_seq - ret (copied_seq advanced by exactly ret).
 * - fentry/tcp_sendmsg + fexit/tcp_sendmsg_locked: a write's entry time, then the bytes it
 *   queued: seq of the first = tp->write_seq - ret, read while tcp_sendmsg still holds the
 *   socket lock (see fxb_send_exit).
 * - tp_btf/sched_wakeup + tp_btf/sched_switch: the last (wakeup, on-CPU) pair of every
 *   thread that read a watched socket; a read carries it.
 *
 * Kernel types: minimal local definitions with preserve_access_index (CO-RE); libbpf
 * relocates each field against the running kernel's BTF (/sys/kernel/btf/vmlinux).
 * Records never wake user space: the TC ring's consumer drains this ring on each poll.
 */
#include <linux/bpf.h>
#include <linux/in6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "fixscope.h"
#include "breakdown.h"
#include "watch_filter.h"
#include "sock_watch.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MSG_PEEK 0x2
#define MSG_ERRQUEUE 0x2000


struct task_struct {
	int pid; /* the kernel's thread id */
} __attribute__((preserve_access_index));

/* Not used by the programs: puts the shared types into the skeleton (see breakdown.h). */
const volatile struct fxb_abi fxb_abi = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized by the loader */
} fxb_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fxb_counters);
} fxb_counters SEC(".maps");

/* A write between tcp_sendmsg's entry and the end of tcp_sendmsg_locked, by thread id. */
struct fxb_send {
	__u64 ts_ns;
	__u64 sk;
	__u32 seq; /* tracepoint path: write_seq under the lock */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct fxb_send);
} fxb_sends SEC(".maps");

/* A read between tcp_recvmsg's entry and exit, by thread id: copied_seq at entry. */
struct fxb_recv {
	__u64 sk;
	__u32 copied_seq;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct fxb_recv);
} fxb_recvs SEC(".maps");

/* A thread that read a watched socket: its scheduling. */
struct fxb_thread {
	__u64 pending_woken; /* a wakeup not yet followed by getting a CPU (0: none) */
	__u64 woken_ns;      /* the last completed pair */
	__u64 on_cpu_ns;
};

/* Bounded: an application with more reader threads than this loses the oldest's wakeups
 * (their reads then carry none), never a wrong pair. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct fxb_thread);
} fxb_threads SEC(".maps");

/* Per CPU: the tracked thread this CPU switched to last (0: none), so that sched_switch
 * looks a switched-out thread up only when it is a tracked one. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fxb_on_cpu SEC(".maps");

static __always_inline struct fxb_counters *counters(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&fxb_counters, &zero);
}

/* Whether SK is a watched connection for a read or a write (sock_watch.h); if so fills
 * R's flow and direction. */
static __always_inline int watched(struct sock *sk, const int read, struct fxb_rec *r)
{
	struct fxs_sock_flow f;
	if (!sock_watched(sk, read, &f))
		return 0;
	__builtin_memcpy(r->saddr, f.saddr, 16);
	__builtin_memcpy(r->daddr, f.daddr, 16);
	r->sport = f.sport;
	r->dport = f.dport;
	r->family = f.family;
	r->dir = f.dir;
	return 1;
}

static __always_inline void emit(struct fxb_rec *h, struct fxb_counters *c)
{
	struct fxb_rec *r = bpf_ringbuf_reserve(&fxb_ring, sizeof(*r), 0);
	if (!r) {
		FXS_ADD(&c->n[FXB_CNT_RING_DROPS], 1);
		return;
	}
	__builtin_memcpy(r, h, sizeof(*h));
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	FXS_ADD(&c->n[h->call == FXB_CALL_READ ? FXB_CNT_READS : FXB_CNT_WRITES], 1);
}

/* Emits the read of N bytes from SEQ on that just returned, with the thread's last
 * wakeup. */
static __always_inline void record_read(__u32 seq, int n, struct fxb_rec *hp,
					struct fxb_counters *c)
{
	struct fxb_rec h = *hp;
	h.ts_ns = bpf_ktime_get_ns();
	h.seq = seq;
	h.len = n;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	h.tid = tid;
	h.call = FXB_CALL_READ;
	struct fxb_thread *t = bpf_map_lookup_elem(&fxb_threads, &tid);
	if (t) {
		h.woken_ns = t->woken_ns;
		h.on_cpu_ns = t->on_cpu_ns;
	} else {
		/* From now on the scheduler hooks follow this thread (its first read carries no
		 * wakeup: it was not followed yet). */
		struct fxb_thread zero = {};
		bpf_map_update_elem(&fxb_threads, &tid, &zero, BPF_NOEXIST);
	}
	emit(&h, c);
}

/*
 * Reads, part 1: copied_seq at tcp_recvmsg's entry is the seq of the first byte the read
 * will return. At the exit it is not always first + ret: a read that also consumes the
 * peer's FIN advances it one more (and a peek not at all).
 */
SEC("fentry/tcp_recvmsg")
int fxb_recv_entry(unsigned long long *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct fxb_rec h = {};
	if (!watched(sk, 1, &h))
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct fxb_recv r = {.sk = (__u64)sk, .copied_seq = BPF_CORE_READ(tp, copied_seq)};
	bpf_map_update_elem(&fxb_recvs, &tid, &r, BPF_ANY);
	return 0;
}

/* Reads, part 2: the return value and flags as this kernel's tcp_recvmsg places them
 * (recvmsg_exit_args, sock_watch.h). */
SEC("fexit/tcp_recvmsg")
int fxb_recv_exit(unsigned long long *ctx)
{
	struct fxb_counters *c = counters();
	if (!c)
		return 0;
	FXS_ADD(&c->n[FXB_CNT_RECV_CALLS], 1);
	struct sock *sk = (struct sock *)ctx[0];
	struct fxb_rec h = {};
	if (!watched(sk, 1, &h))
		return 0;
	__u64 ret, flags;
	recvmsg_exit_args(ctx, &ret, &flags);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct fxb_recv *e = bpf_map_lookup_elem(&fxb_recvs, &tid);
	if (!e)
		return 0; /* the entry hook came after this read began */
	struct fxb_recv entry = *e;
	bpf_map_delete_elem(&fxb_recvs, &tid);
	int n = (int)ret;
	if (n <= 0)
		return 0;
	/* A peek leaves copied_seq where it was, an error-queue read never touches the
	 * stream: neither is a read of the stream's bytes. */
	if (flags & (MSG_PEEK | MSG_ERRQUEUE)) {
		FXS_ADD(&c->n[FXB_CNT_SKIPPED], 1);
		return 0;
	}
	/* The n bytes, plus one if the read also consumed the FIN; anything else (another
	 * thread reading the same socket at once, TCP urgent data) is skipped, never guessed. */
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 moved = BPF_CORE_READ(tp, copied_seq) - entry.copied_seq;
	if (entry.sk != (__u64)sk || (moved != (__u32)n && moved != (__u32)n + 1)) {
		FXS_ADD(&c->n[FXB_CNT_SKIPPED], 1);
		return 0;
	}
	record_read(entry.copied_seq, n, &h, c);
	return 0;
}

/*
 * Writes, part 1: the entry time, by thread, for watched sockets only. tcp_sendmsg takes
 * the socket lock (lock_sock) and then calls tcp_sendmsg_locked; write_seq is read in
 * part 2, under that lock.
 */
SEC("fentry/tcp_sendmsg")
int fxb_send_entry(unsigned long long *ctx)
{
	__u64 ts = bpf_ktime_get_ns();
	struct fxb_counters *c = counters();
	if (!c)
		return 0;
	FXS_ADD(&c->n[FXB_CNT_SEND_CALLS], 1);
	struct sock *sk = (struct sock *)ctx[0];
	struct fxb_rec h = {};
	if (!watched(sk, 0, &h))
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	/* write_seq now (without the lock) is where this call's bytes will start unless another
	 * write to the socket gets the lock first; part 2 checks it. */
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct fxb_send s = {.ts_ns = ts, .sk = (__u64)sk, .seq = BPF_CORE_READ(tp, write_seq)};
	bpf_map_update_elem(&fxb_sends, &tid, &s, BPF_ANY);
	return 0;
}

/*
 * Writes, part 2: tcp_sendmsg_locked(sk, msg, size) returned the bytes it queued (fewer
 * than asked on a non-blocking or interrupted write). Its fexit still runs under the
 * socket lock tcp_sendmsg holds, so write_seq has moved by exactly those bytes and nothing
 * else: the first of them is write_seq - ret. Reading write_seq at tcp_sendmsg's own exit
 * instead would race with another thread's write to the same socket (after release_sock),
 * and at its entry with one still in progress.
 */
SEC("fexit/tcp_sendmsg_locked")
int fxb_send_exit(unsigned long long *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct fxb_rec h = {};
	if (!watched(sk, 0, &h))
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct fxb_send *s = bpf_map_lookup_elem(&fxb_sends, &tid);
	struct fxb_counters *c = counters();
	if (!c)
		return 0;
	/* No entry seen (a caller other than tcp_sendmsg, e.g. kernel TLS; or the hooks were
	 * attached between the two): no entry time, no event. */
	if (!s || s->sk != (__u64)sk) {
		FXS_ADD(&c->n[FXB_CNT_SKIPPED], 1);
		return 0;
	}
	struct fxb_send entry = *s;
	bpf_map_delete_elem(&fxb_sends, &tid);
	int n = (int)ctx[3];
	if (n <= 0)
		return 0;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 first = BPF_CORE_READ(tp, write_seq) - (__u32)n;
	/* The entry must be this call's. On a preemptible kernel a program can be skipped as a
	 * recursion miss (another task ran it on this CPU meanwhile): a missed exit leaves the
	 * entry of an earlier call, and if the next call's entry is missed too, its exit would
	 * find that older, earlier time. Its write_seq then lies before this call's first byte
	 * (the earlier call queued bytes since). So does another thread's write that took the
	 * lock between this entry and this copy: skipped as well, never guessed. */
	if (first != entry.seq) {
		FXS_ADD(&c->n[FXB_CNT_SKIPPED], 1);
		return 0;
	}
	h.ts_ns = entry.ts_ns;
	h.seq = first;
	h.len = n;
	h.tid = tid;
	h.call = FXB_CALL_WRITE;
	emit(&h, c);
	return 0;
}

/*
 * The scheduler: sched_wakeup(p) and sched_switch(preempt, prev, next[, prev_state]) fire
 * for every thread of the host, so each run costs one hash lookup for threads that are not
 * followed (and a per-CPU array read). sched_wakeup_new is not hooked: a new thread cannot
 * have read a watched socket yet.
 */
SEC("tp_btf/sched_wakeup")
int fxb_wakeup(unsigned long long *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u32 tid = p->pid;
	struct fxb_thread *t = bpf_map_lookup_elem(&fxb_threads, &tid);
	if (t)
		t->pending_woken = bpf_ktime_get_ns();
	struct fxb_counters *c = counters();
	if (c)
		FXS_ADD(&c->n[FXB_CNT_SCHED_CALLS], 1);
	return 0;
}

SEC("tp_btf/sched_switch")
int fxb_switch(unsigned long long *ctx)
{
	__u32 zero = 0;
	__u32 *cur = bpf_map_lookup_elem(&fxb_on_cpu, &zero);
	struct fxb_counters *c = counters();
	if (!cur || !c)
		return 0;
	FXS_ADD(&c->n[FXB_CNT_SCHED_CALLS], 1);
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];
	if (*cur) {
		/* A followed thread leaves the CPU: a wakeup recorded while it was running (the
		 * waker found it still on the CPU) is not one it waited for. */
		__u32 prev_tid = prev->pid;
		if (prev_tid == *cur) {
			struct fxb_thread *t = bpf_map_lookup_elem(&fxb_threads, &prev_tid);
			if (t)
				t->pending_woken = 0;
		}
		*cur = 0;
	}
	__u32 tid = next->pid;
	struct fxb_thread *t = bpf_map_lookup_elem(&fxb_threads, &tid);
	if (!t)
		return 0;
	*cur = tid;
	__u64 woken = t->pending_woken;
	if (woken) {
		/* woken <= on_cpu: both from this CPU's view of one clock, the wakeup first. */
		t->woken_ns = woken;
		t->on_cpu_ns = bpf_ktime_get_ns();
		t->pending_woken = 0;
	}
	return 0;
}

/*
 * The same socket calls from tracepoints, for kernels that refuse fentry/fexit (no BPF
 * trampolines, or a policy against them) but have the socket-layer tracepoints
 * (sock_recv_length, sock_send_length: Linux 6.4; tcp_sendmsg_locked: 6.12). The loader
 * uses these only when the fentry/fexit programs do not load.
 *
 * Reads: sock_recv_length(sk, ret, flags) fires as sock_recvmsg returns: the same point,
 * and the same seq rule, as the fexit above.
 */
SEC("tp_btf/sock_recv_length")
int fxb_tp_recv(unsigned long long *ctx)
{
	struct fxb_counters *c = counters();
	if (!c)
		return 0;
	FXS_ADD(&c->n[FXB_CNT_RECV_CALLS], 1);
	struct sock *sk = (struct sock *)ctx[0];
	int n = (int)ctx[1];
	__u64 flags = ctx[2];
	if (n <= 0)
		return 0;
	struct fxb_rec h = {};
	if (!watched(sk, 1, &h))
		return 0;
	if (flags & (MSG_PEEK | MSG_ERRQUEUE)) {
		FXS_ADD(&c->n[FXB_CNT_SKIPPED], 1);
		return 0;
	}
	/* No entry hook here: the first byte is where the read stopped less n (read_end,
	 * sock_watch.h: a consumed FIN counted out). */
	record_read(read_end(sk) - (__u32)n, n, &h, c);
	return 0;
}

/*
 * Writes, part 1: tcp_sendmsg_locked's tracepoint fires under the socket lock at the top of
 * each pass of its copy loop, before the pass queues anything. The first pass of a call
 * stashes the time and write_seq — the seq of the call's first byte; later passes find the
 * stash. The time is taken just after lock_sock rather than at tcp_sendmsg's entry: still
 * before any of the call's bytes can reach the wire.
 */
SEC("tp_btf/tcp_sendmsg_locked")
int fxb_tp_locked(unsigned long long *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct fxb_rec h = {};
	if (!watched(sk, 0, &h))
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct fxb_send s = {
		.ts_ns = bpf_ktime_get_ns(),
		.sk = (__u64)sk,
		.seq = BPF_CORE_READ(tp, write_seq),
	};
	bpf_map_update_elem(&fxb_sends, &tid, &s, BPF_NOEXIST);
	return 0;
}

/* Writes, part 2: sock_send_length(sk, ret, 0) fires as sock_sendmsg returns the bytes
 * queued. */
SEC("tp_btf/sock_send_length")
int fxb_tp_send(unsigned long long *ctx)
{
	struct fxb_counters *c = counters();
	if (!c)
		return 0;
	FXS_ADD(&c->n[FXB_CNT_SEND_CALLS], 1);
	struct sock *sk = (struct sock *)ctx[0];
	struct fxb_rec h = {};
	if (!watched(sk, 0, &h))
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct fxb_send *s = bpf_map_lookup_elem(&fxb_sends, &tid);
	if (!s)
		return 0; /* nothing queued (an error before the copy loop) */
	struct fxb_send st = *s;
	bpf_map_delete_elem(&fxb_sends, &tid);
	int n = (int)ctx[1];
	if (n <= 0)
		return 0;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	/* The stash must be this call's: same socket, and exactly its n bytes queued since. A
	 * stash left by an earlier call whose exit was missed (a recursion miss on a preemptible
	 * kernel) has more bytes after it — that call's too — and would give this write an
	 * earlier time and seq; another thread's write since release_sock also shows as more.
	 * Both are skipped, never guessed. */
	if (st.sk != (__u64)sk || BPF_CORE_READ(tp, write_seq) - st.seq != (__u32)n) {
		FXS_ADD(&c->n[FXB_CNT_SKIPPED], 1);
		return 0;
	}
	h.ts_ns = st.ts_ns;
	h.seq = st.seq;
	h.len = n;
	h.tid = tid;
	h.call = FXB_CALL_WRITE;
	emit(&h, c);
	return 0;
}
