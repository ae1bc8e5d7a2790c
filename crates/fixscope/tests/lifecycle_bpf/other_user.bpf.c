// Someone else's BPF programs on the same interface as fixscope: a tc (clsact) filter and a
// TCX program, each counting the IPv4 TCP packets to PORT it sees at ingress, and passing
// everything on (TC_ACT_UNSPEC / TCX_NEXT), as a well-behaved neighbour does. PORT comes
// from the compiler command line (-DPORT=...). No libbpf headers needed.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>

#define SEC(name) __attribute__((section(name), used))
#define HTONS(x) ((__u16)__builtin_bswap16((__u16)(x)))

__u64 hits_tc = 0;
__u64 hits_tcx = 0;

static __attribute__((always_inline)) int to_port(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != HTONS(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP || ip->ihl != 5)
		return 0;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > end)
		return 0;
	return tcp->dest == HTONS(PORT);
}

SEC("tc")
int other_tc(struct __sk_buff *skb)
{
	if (to_port(skb))
		__sync_fetch_and_add(&hits_tc, 1);
	return -1; /* TC_ACT_UNSPEC: the next filter runs */
}

SEC("tcx/ingress")
int other_tcx(struct __sk_buff *skb)
{
	if (to_port(skb))
		__sync_fetch_and_add(&hits_tcx, 1);
	return -1; /* TCX_NEXT */
}

char LICENSE[] SEC("license") = "GPL";
