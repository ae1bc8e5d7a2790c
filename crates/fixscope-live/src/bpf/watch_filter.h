/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The watch filter — which connections are watched and which way their bytes go — for
 * both BPF objects: the TC programs (fixscope.bpf.c) and --breakdown's socket hooks
 * (breakdown.bpf.c) must take exactly the same connections, so an event's bytes are those
 * of the segments the TC programs take. One definition here; the loader fills the rodata
 * of each object from one Rust value (src/filter.rs). Include after fixscope.h.
 */
#ifndef __FIXSCOPE_WATCH_FILTER_H
#define __FIXSCOPE_WATCH_FILTER_H

/* Set by the loader before load (rodata: the verifier prunes on it). Each port range has
 * its own role (enum fxs_role): one run may watch a router's client sessions as their
 * acceptor and its venue sessions as their initiator (--leg). */
const volatile __u32 cfg_nranges = 0;
const volatile __u16 cfg_port_lo[FXS_MAX_RANGES] = {};
const volatile __u16 cfg_port_hi[FXS_MAX_RANGES] = {};
const volatile __u8 cfg_port_role[FXS_MAX_RANGES] = {};
const volatile __u32 cfg_ip_family = 0; /* 0: no address filter, 4 or 6 */
const volatile __u32 cfg_ip[4] = {};    /* network order; IPv4 in cfg_ip[0] */

/* The role (enum fxs_role) of the range holding PORT; -1 when no range holds it. */
static __always_inline int port_role(__u16 port)
{
	for (int i = 0; i < FXS_MAX_RANGES; i++) {
		if (i >= cfg_nranges)
			break;
		if (port >= cfg_port_lo[i] && port <= cfg_port_hi[i])
			return cfg_port_role[i];
	}
	return -1;
}

/*
 * Whether bytes from port SPORT to port DPORT, coming into this host (INBOUND) or going
 * out, are watched, and if so which way (*DIR). The watched port's role decides: a server
 * takes what comes in to its port as requests and what goes out from it as responses; a
 * client the mirror image. Bytes toward a watched port are never responses (bytes between
 * two watched ports are requests, or nothing).
 */
static __always_inline int watched_direction(const int inbound, __u16 sport, __u16 dport,
					     enum fxs_dir *dir)
{
	int role = port_role(dport);
	if (role >= 0) {
		if (inbound != (role == FXS_ROLE_SERVER))
			return 0;
		*dir = FXS_DIR_REQUEST;
		return 1;
	}
	role = port_role(sport);
	if (role < 0 || inbound == (role == FXS_ROLE_SERVER))
		return 0;
	*dir = FXS_DIR_RESPONSE;
	return 1;
}

static __always_inline int is_cfg_ip(const __u32 *a)
{
	return a[0] == cfg_ip[0] && a[1] == cfg_ip[1] && a[2] == cfg_ip[2] && a[3] == cfg_ip[3];
}

/* The address rule: no address filter, or the family matches and one end is the address. */
static __always_inline int watched_addresses(__u32 family, const __u32 *a, const __u32 *b)
{
	if (!cfg_ip_family)
		return 1;
	if (family != cfg_ip_family)
		return 0;
	return is_cfg_ip(a) || is_cfg_ip(b);
}

#endif /* __FIXSCOPE_WATCH_FILTER_H */
