// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fixscope live capture: TC/TCX ingress+egress programs that copy the TCP payload of
 * watched ports into the ring buffer of the CPU they run on, with a CLOCK_MONOTONIC
 * timestamp. One ring per CPU: a shared ring's producer lock and positions moved between
 * the CPUs on every record (~300 ns of a copying run, BENCHMARKS.md §4a); user space
 * merges the rings by timestamp.
 *
 * Never changes a packet's fate: every path returns TC_ACT_UNSPEC (== TCX_NEXT).
 * Never wakes user space per record: BPF_RB_NO_WAKEUP until this CPU has reserved
 * cfg_wakeup_bytes of its ring since its last wakeup. A full ring (or a CPU without a
 * ring) drops the record and counts it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "fixscope.h"
#include "watch_filter.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define PASS TC_ACT_UNSPEC /* == TCX_NEXT */

#define TCPF_FIN 0x01
#define TCPF_SYN 0x02
#define TCPF_RST 0x04

/* Configuration, set by the loader before load (rodata: the verifier prunes on it); the
 * watch filter's is in watch_filter.h. */
const volatile __u32 cfg_l2_len = ETH_HLEN; /* 14 for Ethernet/loopback, 0 for L3 devices */
const volatile __u64 cfg_wakeup_bytes = 0;  /* per CPU ring; 0: wake on every record */

/* Not used by the programs: puts the shared types into the skeleton (see fixscope.h). */
const volatile struct fxs_abi fxs_abi = {};

/* The template of the per-CPU rings: user space creates one ring per online CPU, of the
 * size it chose, and puts it at the CPU's index (a ring's size is not part of what the
 * kernel compares between the template and an inner map). */
struct fxs_ring_inner {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* resized by the loader: one slot per possible CPU */
	__type(key, __u32);
	__array(values, struct fxs_ring_inner);
} fxs_rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fxs_counters);
} fxs_counters SEC(".maps");

/*
 * Emits one record with room for CAP payload bytes, copying the payload straight from the
 * skb into the ring (bpf_ringbuf_reserve needs a constant size, hence a few size classes;
 * the record's `len` says how much of the room is used). Returns 0, or -1 if the ring was
 * full.
 */
#define DEFINE_EMIT(CAP)                                                                      \
	static __always_inline int emit_##CAP(void *ring, struct __sk_buff *skb,               \
					      struct fxs_rec *h, __u32 off, __u32 n,           \
					      struct fxs_counters *c)                          \
	{                                                                                      \
		struct {                                                                       \
			struct fxs_rec hdr;                                                    \
			__u8 data[CAP];                                                        \
		} *r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);                               \
		if (!r)                                                                        \
			return -1;                                                             \
		/* Wake user space once this CPU has filled cfg_wakeup_bytes of its own ring  \
		 * since its last wakeup (8: the ring's record header). A consumer asleep on  \
		 * an empty ring is woken by the time the ring holds the threshold. */        \
		__u64 wf = BPF_RB_NO_WAKEUP;                                                   \
		/* Two programs interleaved on this CPU (preemptible/RT kernels) may both     \
		 * wake, or a reset may drop the other's add: a wakeup a little early or late,\
		 * never a wrong count. */                                                     \
		FXS_ADD(&c->unwoken_bytes, sizeof(*r) + 8);                                    \
		if (c->unwoken_bytes >= cfg_wakeup_bytes) {                                    \
			wf = BPF_RB_FORCE_WAKEUP;                                              \
			c->unwoken_bytes = 0;                                                  \
			FXS_ADD(&c->n[FXS_CNT_WAKEUPS], 1);                                               \
		}                                                                              \
		/* The verifier must see 0 < n <= CAP on the length passed to the helper. The \
		 * barriers keep clang from dropping a check it can prove from the caller, and \
		 * the signed test stays a "> 0" jump: Linux < 6.8 learns nothing from the    \
		 * "!= 0" that clang makes of an unsigned "n > 0". */                          \
		barrier_var(n);                                                                \
		if (n > CAP)                                                                   \
			n = CAP;                                                               \
		barrier_var(n);                                                                \
		if ((__s32)n > 0 && bpf_skb_load_bytes(skb, off, r->data, n)) {                \
			FXS_ADD(&c->n[FXS_CNT_LOAD_ERRORS], 1);                                           \
			h->cut += n;                                                           \
			n = 0;                                                                 \
		}                                                                              \
		h->len = n;                                                                    \
		__builtin_memcpy(&r->hdr, h, sizeof(*h));                                      \
		bpf_ringbuf_submit(r, wf);                                                     \
		return 0;                                                                      \
	}

/* Size classes a half-power of two apart up to 2 KiB (a record never takes more than 1.5
 * times its size of ring; a 300-byte FIX message takes 464 bytes, not 592), powers of two
 * above: reserve needs a constant size, and each class is code in every chunk. */
DEFINE_EMIT(128)
DEFINE_EMIT(192)
DEFINE_EMIT(256)
DEFINE_EMIT(384)
DEFINE_EMIT(512)
DEFINE_EMIT(768)
DEFINE_EMIT(1024)
DEFINE_EMIT(1536)
DEFINE_EMIT(2048)
DEFINE_EMIT(4096)
DEFINE_EMIT(8192)
DEFINE_EMIT(16384) /* == FXS_CHUNK */
_Static_assert(FXS_CHUNK == 16384, "emit_16384 must match FXS_CHUNK");

/* Header offsets beyond this are read through the helper: the bound lets the verifier
 * accept direct packet access at a variable offset. */
#define FXS_DIRECT_MAX_OFF 1024

/*
 * Copies LEN header bytes at OFF. Headers are nearly always in the skb's linear area,
 * where a direct read costs a few ns against ~25 ns for a bpf_skb_load_bytes call; the
 * helper remains the fallback for anything else (it also handles non-linear data).
 */
static __always_inline int load_hdr(struct __sk_buff *skb, __u32 off, void *to, const __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (off <= FXS_DIRECT_MAX_OFF) {
		void *p = data + off;
		if (p + len <= data_end) {
			__builtin_memcpy(to, p, len);
			return 0;
		}
	}
	return bpf_skb_load_bytes(skb, off, to, len);
}

/*
 * Emits chunk I of a skb's payload (PLEN bytes at POFF): bytes I * FXS_CHUNK onwards, at most
 * FXS_CHUNK of them; the last chunk (the one that reaches the end, or chunk FXS_MAX_CHUNKS - 1)
 * counts what it leaves out as `cut`. Returns 1 if this was the last chunk. Every chunk but
 * the last is full, so chunk I starts at I * FXS_CHUNK.
 */
static __always_inline int emit_chunk(void *ring, struct __sk_buff *skb,
				      struct fxs_counters *c, struct fxs_rec *h, const int i,
				      __u32 plen, __u32 poff,
				      __u32 seq, __u8 flags, enum fxs_dir dir)
{
	__u32 done = (__u32)i * FXS_CHUNK;
	__u32 rest = plen - done;
	__u32 n = rest > FXS_CHUNK ? FXS_CHUNK : rest;
	int last = rest <= FXS_CHUNK || i == FXS_MAX_CHUNKS - 1;
	__u8 f = flags;
	if (i > 0)
		f &= ~TCPF_SYN;
	if (!last)
		f &= ~(TCPF_FIN | TCPF_RST);
	h->seq = seq + done + ((flags & TCPF_SYN) && i > 0 ? 1 : 0);
	h->offset = done;
	h->flags = f;
	h->cut = last ? rest - n : 0;

	__u32 at = poff + done;
	int err;
	if (!ring) {
		err = -1; /* a CPU that came online after the rings were made */
	} else if (n <= 512) {
		if (n <= 256) {
			if (n <= 128)
				err = emit_128(ring, skb, h, at, n, c);
			else if (n <= 192)
				err = emit_192(ring, skb, h, at, n, c);
			else
				err = emit_256(ring, skb, h, at, n, c);
		} else if (n <= 384) {
			err = emit_384(ring, skb, h, at, n, c);
		} else {
			err = emit_512(ring, skb, h, at, n, c);
		}
	} else if (n <= 2048) {
		if (n <= 768)
			err = emit_768(ring, skb, h, at, n, c);
		else if (n <= 1024)
			err = emit_1024(ring, skb, h, at, n, c);
		else if (n <= 1536)
			err = emit_1536(ring, skb, h, at, n, c);
		else
			err = emit_2048(ring, skb, h, at, n, c);
	} else if (n <= 4096) {
		err = emit_4096(ring, skb, h, at, n, c);
	} else if (n <= 8192) {
		err = emit_8192(ring, skb, h, at, n, c);
	} else {
		err = emit_16384(ring, skb, h, at, n, c);
	}
	if (err) {
		if (dir == FXS_DIR_REQUEST)
			FXS_ADD(&c->n[FXS_CNT_RING_DROPS_REQUEST], 1);
		else
			FXS_ADD(&c->n[FXS_CNT_RING_DROPS_RESPONSE], 1);
		FXS_ADD(&c->n[FXS_CNT_DROPPED_BYTES], n);
	} else {
		FXS_ADD(&c->n[FXS_CNT_RECORDS], 1);
		FXS_ADD(&c->n[FXS_CNT_CUT_BYTES], h->cut);
	}
	return last;
}

static __always_inline int handle(struct __sk_buff *skb, const enum fxs_hook hook)
{
	__u32 zero = 0;
	struct fxs_counters *c = bpf_map_lookup_elem(&fxs_counters, &zero);
	if (!c)
		return PASS;
	FXS_ADD(&c->n[FXS_CNT_HOOK_CALLS], 1);

	/* ---- L2: skip the Ethernet header and in-packet 802.1Q/802.1ad tags. An offloaded
	 * tag (skb->vlan_tci) is not in the data and skb->protocol is already the inner type. */
	__u32 off = cfg_l2_len;
	__u16 proto = skb->protocol;
	if (cfg_l2_len) {
		for (int i = 0; i < 2; i++) {
			if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
				break;
			if (load_hdr(skb, off + 2, &proto, sizeof(proto)))
				return PASS;
			off += 4;
		}
	}

	__u32 skb_len = skb->len;
	__u32 saddr[4] = {}, daddr[4] = {};
	__u32 l4off, l4len, family;

	/* ---- L3 */
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;
		if (load_hdr(skb, off, &ip, sizeof(ip)))
			return PASS;
		if (ip.protocol != IPPROTO_TCP || (ip.frag_off & bpf_htons(0x3fff)))
			return PASS; /* not TCP, or a fragment */
		__u32 ihl = ip.ihl * 4;
		__u32 iplen = bpf_ntohs(ip.tot_len);
		if (iplen == 0 || iplen > skb_len - off) /* 0: GSO > 64 KiB */
			iplen = skb_len - off;
		if (ihl < sizeof(ip) || ihl > iplen || off > skb_len)
			return PASS;
		saddr[0] = ip.saddr;
		daddr[0] = ip.daddr;
		family = 4;
		l4off = off + ihl;
		l4len = iplen - ihl;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;
		if (load_hdr(skb, off, &ip6, sizeof(ip6)))
			return PASS;
		if (off > skb_len)
			return PASS;
		__u32 iplen = bpf_ntohs(ip6.payload_len) + sizeof(ip6);
		if (iplen == sizeof(ip6) || iplen > skb_len - off) /* 0: jumbo / BIG TCP */
			iplen = skb_len - off;
		__u8 nh = ip6.nexthdr;
		l4off = off + sizeof(ip6);
		for (int i = 0; i < 4; i++) {
			if (nh != 0 && nh != 43 && nh != 60) /* hop-by-hop, routing, dest opts */
				break;
			__u8 ext[2];
			if (load_hdr(skb, l4off, ext, sizeof(ext)))
				return PASS;
			nh = ext[0];
			l4off += (ext[1] + 1) * 8;
		}
		if (nh != IPPROTO_TCP || l4off - off > iplen)
			return PASS;
		__builtin_memcpy(saddr, &ip6.saddr, 16);
		__builtin_memcpy(daddr, &ip6.daddr, 16);
		family = 6;
		l4len = iplen - (l4off - off);
	} else {
		return PASS;
	}

	/* ---- L4 */
	__u8 th[20];
	if (load_hdr(skb, l4off, th, sizeof(th)))
		return PASS;
	__u16 sport = ((__u16)th[0] << 8) | th[1];
	__u16 dport = ((__u16)th[2] << 8) | th[3];
	__u32 seq = ((__u32)th[4] << 24) | ((__u32)th[5] << 16) | ((__u32)th[6] << 8) | th[7];
	__u32 ack = ((__u32)th[8] << 24) | ((__u32)th[9] << 16) | ((__u32)th[10] << 8) | th[11];
	__u32 thl = (th[12] >> 4) * 4;
	__u8 flags = th[13];
	if (thl < sizeof(th) || thl > l4len)
		return PASS;

	/* ---- Role + ports: each packet is taken at exactly one hook, even on loopback where
	 * it crosses egress then ingress. A packet between two watched ports is a request. */
	enum fxs_dir dir;
	if (!watched_direction(hook == FXS_HOOK_INGRESS, sport, dport, &dir))
		return PASS;
	if (!watched_addresses(family, saddr, daddr))
		return PASS;

	if (dir == FXS_DIR_REQUEST)
		FXS_ADD(&c->n[FXS_CNT_REQUESTS_IN_RANGE], 1);
	else
		FXS_ADD(&c->n[FXS_CNT_RESPONSES_IN_RANGE], 1);

	__u32 plen = l4len - thl;
	__u32 poff = l4off + thl;
	if (plen == 0 && !(flags & (TCPF_SYN | TCPF_FIN | TCPF_RST)))
		return PASS; /* pure ACK */
	FXS_ADD(&c->n[FXS_CNT_PAYLOAD_BYTES], plen);

	struct fxs_rec h = {};
	h.ts_ns = bpf_ktime_get_ns();
	__builtin_memcpy(h.saddr, saddr, 16);
	__builtin_memcpy(h.daddr, daddr, 16);
	h.ack = ack;
	h.seg_len = plen;
	h.ifindex = skb->ifindex;
	h.sport = sport;
	h.dport = dport;
	h.family = family;
	h.dir = dir;
	h.hook = hook;

	/* This CPU's ring. The program cannot migrate while it runs (BH off), so every chunk
	 * of this skb goes to the same ring. */
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&fxs_rings, &cpu);

	/* ---- Payload, in chunks of at most FXS_CHUNK bytes (GSO/GRO skbs reach 64 KiB). Written
	 * out, not as a loop: clang lays that loop out so that its header is entered by falling
	 * through from a non-jump instruction, which the verifier of Linux < 6.4 (Debian 12's 6.1)
	 * rejects as "back-edge from insn X to X+1". Straight-line code passes every verifier,
	 * and the common one-chunk packet runs exactly the code it ran as a loop. */
	_Static_assert(FXS_MAX_CHUNKS == 8, "one emit_chunk call per chunk below");
	if (emit_chunk(ring, skb, c, &h, 0, plen, poff, seq, flags, dir) ||
	    emit_chunk(ring, skb, c, &h, 1, plen, poff, seq, flags, dir) ||
	    emit_chunk(ring, skb, c, &h, 2, plen, poff, seq, flags, dir) ||
	    emit_chunk(ring, skb, c, &h, 3, plen, poff, seq, flags, dir) ||
	    emit_chunk(ring, skb, c, &h, 4, plen, poff, seq, flags, dir) ||
	    emit_chunk(ring, skb, c, &h, 5, plen, poff, seq, flags, dir) ||
	    emit_chunk(ring, skb, c, &h, 6, plen, poff, seq, flags, dir))
		return PASS;
	emit_chunk(ring, skb, c, &h, 7, plen, poff, seq, flags, dir);
	return PASS;
}

SEC("tcx/ingress")
int fxs_ingress(struct __sk_buff *skb)
{
	return handle(skb, FXS_HOOK_INGRESS);
}

SEC("tcx/egress")
int fxs_egress(struct __sk_buff *skb)
{
	return handle(skb, FXS_HOOK_EGRESS);
}
