/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The socket fields the socket-call hooks read (breakdown.bpf.c, tls_uprobe.bpf.c), and
 * the watch rule they share with the TC programs: whether a socket is a watched
 * connection, and its flow as the bytes travel on the wire. Include after
 * watch_filter.h.
 */
#ifndef __FIXSCOPE_SOCK_WATCH_H
#define __FIXSCOPE_SOCK_WATCH_H

#include <linux/in6.h>

#define AF_INET 2
#define AF_INET6 10

/* ---- The kernel fields used, relocated by libbpf against the kernel's BTF. */
struct sock_common {
	__be32 skc_daddr;      /* remote IPv4 */
	__be32 skc_rcv_saddr;  /* local IPv4 */
	__be16 skc_dport;      /* remote port, network order */
	__u16 skc_num;         /* local port, host order */
	unsigned short skc_family;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u8 sk_shutdown; /* RCV_SHUTDOWN: the peer's FIN came (or shutdown(SHUT_RD), a RST) */
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 rcv_nxt;    /* what we want to receive next (a received FIN counts one) */
	__u32 copied_seq; /* head of yet unread data (a consumed FIN counts one) */
	__u32 write_seq;  /* tail(+1) of data held in the send buffer */
} __attribute__((preserve_access_index));

/* A watched socket's flow, as the bytes of one call travel on the wire. */
struct fxs_sock_flow {
	__u8 saddr[16]; /* network order; IPv4 in the first 4 */
	__u8 daddr[16];
	__u16 sport;    /* host order */
	__u16 dport;
	__u8 family;    /* 4 or 6 */
	__u8 dir;       /* enum fxs_dir */
};

/*
 * Whether SK is a watched connection for a read (the bytes came in: the TC ingress rule)
 * or a write (they go out: the egress rule); if so fills R's flow — as the bytes travel
 * on the wire — and direction. The same port/role/address rules as fixscope.bpf.c, so an
 * event's bytes are those of the segments the TC programs take.
 */
static __always_inline int sock_watched(struct sock *sk, const int read,
					 struct fxs_sock_flow *r)
{
	/* Direct loads: the hooks' sk is a BTF pointer the verifier checks field by field (a
	 * few ns, against ~20 for each bpf_probe_read_kernel). */
	__u16 lport = sk->__sk_common.skc_num;
	__u16 rport = bpf_ntohs(sk->__sk_common.skc_dport);
	__u16 src = read ? rport : lport;
	__u16 dst = read ? lport : rport;
	enum fxs_dir dir;
	if (!watched_direction(read, src, dst, &dir))
		return 0;
	r->dir = dir;

	__u32 local[4] = {}, remote[4] = {};
	__u16 family = sk->__sk_common.skc_family;
	if (family == AF_INET) {
		local[0] = sk->__sk_common.skc_rcv_saddr;
		remote[0] = sk->__sk_common.skc_daddr;
		r->family = 4;
	} else if (family == AF_INET6) {
		bpf_core_read(local, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(remote, 16, &sk->__sk_common.skc_v6_daddr);
		/* A dual-stack socket talking IPv4 (::ffff:a.b.c.d): the wire, and so the TC
		 * records, carry IPv4. */
		if (local[0] == 0 && local[1] == 0 && local[2] == bpf_htonl(0xffff)) {
			local[0] = local[3];
			remote[0] = remote[3];
			local[1] = local[2] = local[3] = 0;
			remote[1] = remote[2] = remote[3] = 0;
			r->family = 4;
		} else {
			r->family = 6;
		}
	} else {
		return 0;
	}
	if (!watched_addresses(r->family, local, remote))
		return 0;
	__builtin_memcpy(r->saddr, read ? remote : local, 16);
	__builtin_memcpy(r->daddr, read ? local : remote, 16);
	r->sport = src;
	r->dport = dst;
	return 1;
}


/*
 * fexit/tcp_recvmsg's return value and flags. tcp_recvmsg(sk, msg, len, [nonblock,]
 * flags[, addr_len]): Linux 5.19 dropped `nonblock` and 6.18 `addr_len`, which moves
 * `flags` and the return value in fexit's context (the return value follows the last
 * argument). The loader reads the running kernel's signature from its BTF (a
 * distribution's backport may have any of them) into these, and the verifier keeps only
 * the matching loads (rodata is frozen), so the other offsets are never checked against
 * this kernel's context. No bpf_get_func_arg_cnt: it came in 5.17. The barriers keep clang
 * from merging the loads into one at a computed context offset, which no verifier accepts.
 */
const volatile __u32 cfg_recvmsg_nargs = 5;
const volatile __u32 cfg_recvmsg_flags_arg = 3;

static __always_inline void recvmsg_exit_args(unsigned long long *ctx, __u64 *ret,
					      __u64 *flags)
{
	__u64 r, f;
	if (cfg_recvmsg_flags_arg == 4) {
		f = ctx[4];
		barrier_var(f);
	} else {
		f = ctx[3];
		barrier_var(f);
	}
	if (cfg_recvmsg_nargs == 6) {
		r = ctx[6];
		barrier_var(r);
	} else if (cfg_recvmsg_nargs == 5) {
		r = ctx[5];
		barrier_var(r);
	} else {
		r = ctx[4];
		barrier_var(r);
	}
	*ret = r;
	*flags = f;
}

#define FXS_RCV_SHUTDOWN 1

/*
 * Where a read that just returned stopped: copied_seq, less one if the read also
 * consumed the peer's FIN (copied_seq counts it too). A consumed FIN leaves copied_seq ==
 * rcv_nxt with RCV_SHUTDOWN set (a received but unconsumed one: copied_seq + 1 ==
 * rcv_nxt). The same picture after a RST or shutdown(SHUT_RD) with all data read would
 * place that connection's last read one byte late.
 */
static __always_inline __u32 read_end(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 copied = BPF_CORE_READ(tp, copied_seq);
	__u32 fin = (BPF_CORE_READ(sk, sk_shutdown) & FXS_RCV_SHUTDOWN) &&
		    copied == BPF_CORE_READ(tp, rcv_nxt);
	return copied - fin;
}

#endif /* __FIXSCOPE_SOCK_WATCH_H */
