// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: the link between a device and its netdev.  The port state and
 * MTU are derived from the netdev whenever they are asked for; the netdev
 * notifier only announces changes to ib_core and tears the device down
 * when its netdev goes away.
 *
 * UDP: kernel UDP tunnel sockets per network namespace, shared
 * (refcounted) by the devices whose netdev lives in that namespace, so
 * that two devices in two namespaces of one host talk to each other like
 * two hosts.  Received datagrams are demultiplexed by destination QPN
 * (module-wide, so unique across devices; QP1 by the receiving netdev).
 * A namespace that goes away takes its sockets with it (pernet exit);
 * devices still referring to them drop what they send.
 *
 * Ports (MR-COMPAT-010, MR-COMPAT-011): each namespace has a socket on
 * UDP 4793 for MetaRoCE-mode RC and an IPv4 and an IPv6 socket on 4791.
 * UD and GSI datagrams are IBTA RoCEv2 whatever the wire mode, and the
 * IPv4 4791 socket also carries RoCEv2-mode RC: a datagram's BTH opcode
 * tells UD (0x64/0x65) from RC.  The wire mode is per QP, so a device
 * listens on both ports, and an RC packet that reaches a QP through the
 * other mode's port is dropped and counted (rx_wrong_transport).  A port
 * can be bound once per namespace: where rdma_rxe (whose sockets live in
 * init_net) or anything else holds 4791 first, the devices of that
 * namespace have no UD, and RoCEv2-mode QPs (and a RoCEv2 device default)
 * are refused with -EADDRINUSE.  Load rdma_rxe first to keep it working
 * next to a MetaRoCE device in the same namespace.
 */

#include <linux/crc32.h>
#include <linux/rtnetlink.h>
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <net/addrconf.h>
#include <net/inet_ecn.h>
#include <net/ip6_checksum.h>
#include <net/ip6_route.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/udp_tunnel.h>

#include "metaroce.h"
#include "metaroce_param.h"

/* Bytes of payload a data packet can carry on @ndev (negative: none). */
static int metaroce_payload_room(const struct net_device *ndev)
{
	return (int)READ_ONCE(ndev->mtu) - (int)METAROCE_DATA_PKT_OVERHEAD;
}

/* The largest IB MTU that fits, IB_MTU_256 when none does. */
enum ib_mtu metaroce_active_mtu(const struct net_device *ndev)
{
	int room = metaroce_payload_room(ndev);
	int mtu;

	for (mtu = METAROCE_PORT_MAX_MTU; mtu > IB_MTU_256; mtu--)
		if (ib_mtu_enum_to_int(mtu) <= room)
			break;
	return mtu;
}

/*
 * The port is active while the netdev is up, has carrier and can carry at
 * least IB_MTU_256 of payload per packet.
 */
enum ib_port_state metaroce_port_state(const struct net_device *ndev)
{
	if (netif_running(ndev) && netif_carrier_ok(ndev) &&
	    metaroce_payload_room(ndev) >= ib_mtu_enum_to_int(IB_MTU_256))
		return IB_PORT_ACTIVE;
	return IB_PORT_DOWN;
}

/* Caller holds metaroce_devices_lock. */
struct metaroce_dev *metaroce_find_dev_locked(const struct net_device *ndev)
{
	struct metaroce_dev *mdev;

	lockdep_assert_held(&metaroce_devices_lock);
	list_for_each_entry(mdev, &metaroce_devices, list)
		if (mdev->ndev == ndev)
			return mdev;
	return NULL;
}

/*
 * Announce a port state change.  Caller holds metaroce_devices_lock and a
 * reference on the registered device.
 */
void metaroce_port_update(struct metaroce_dev *mdev)
{
	enum ib_port_state state = metaroce_port_state(mdev->ndev);
	struct ib_event event = {
		.device = &mdev->ib_dev,
		.element.port_num = METAROCE_PORT,
	};

	lockdep_assert_held(&metaroce_devices_lock);
	if (state == mdev->port_event_state)
		return;
	mdev->port_event_state = state;
	event.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}

/*
 * Called once ib_register_device() has succeeded.  While the device was
 * registering the notifier skipped it (ib_device_try_get() failed), so
 * catch up under RTNL, which orders this against the notifier: a netdev
 * that started unregistering meanwhile will not send NETDEV_UNREGISTER
 * again, and a link change may not have been announced.
 */
void metaroce_dev_registered(struct metaroce_dev *mdev)
{
	rtnl_lock();
	mutex_lock(&metaroce_devices_lock);
	/* A concurrent "rdma link delete" may have unregistered it already. */
	if (ib_device_try_get(&mdev->ib_dev)) {
		if (mdev->ndev->reg_state != NETREG_REGISTERED)
			ib_unregister_device_queued(&mdev->ib_dev);
		else
			metaroce_port_update(mdev);
		ib_device_put(&mdev->ib_dev);
	}
	mutex_unlock(&metaroce_devices_lock);
	rtnl_unlock();
}

/* Runs with RTNL held. */
static int metaroce_netdev_event(struct notifier_block *nb,
				 unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct metaroce_dev *mdev;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:		/* carrier */
	case NETDEV_CHANGEMTU:
	case NETDEV_UNREGISTER:
		break;
	default:
		return NOTIFY_DONE;
	}

	mutex_lock(&metaroce_devices_lock);
	/* Plane state and planes whose netdev goes away (plane 0 too). */
	metaroce_planes_netdev_event(ndev, event);
	mdev = metaroce_find_dev_locked(ndev);
	if (!mdev || !ib_device_try_get(&mdev->ib_dev))
		goto out;

	if (event == NETDEV_UNREGISTER)
		/*
		 * Unregistering needs RTNL (GID table) and may wait for
		 * userspace: do it from a work item, like rxe.
		 */
		ib_unregister_device_queued(&mdev->ib_dev);
	else
		metaroce_port_update(mdev);
	ib_device_put(&mdev->ib_dev);
out:
	mutex_unlock(&metaroce_devices_lock);
	return NOTIFY_OK;
}

static struct notifier_block metaroce_netdev_notifier = {
	.notifier_call = metaroce_netdev_event,
};

/* Seed of the ICRC: CRC-32 of eight 0xff bytes, the masked IB LRH. */
#define METAROCE_ICRC_SEED	0xdebb20e3

/*
 * The IBTA ICRC of a RoCEv2 packet, UD or RoCEv2-mode RC (MR-COMPAT-010,
 * MR-COMPAT-012): @udp points at its UDP header, @len bytes from there to
 * the end including the 4-byte ICRC itself; the skb's network header is
 * the packet's IP header (IPv4 without options, or IPv6).  Masked (set to
 * ones, IBTA A17.8.2): IPv4 TOS, TTL and checksum, IPv6 traffic class,
 * flow label and hop limit, the UDP checksum and the BTH's reserved byte
 * before the QPN.
 */
static u32 metaroce_icrc(const struct sk_buff *skb, const u8 *udp, size_t len)
{
	u8 hdr[sizeof(struct ipv6hdr) + sizeof(struct udphdr) + MR_BTH_LEN];
	size_t iplen, fixed;
	u32 crc;

	if (ip_hdr(skb)->version == 4) {
		struct iphdr *ip4 = (struct iphdr *)hdr;

		iplen = sizeof(*ip4);
		memcpy(ip4, ip_hdr(skb), iplen);
		ip4->tos = 0xff;
		ip4->ttl = 0xff;
		ip4->check = (__force __sum16)0xffff;	/* all ones: no byte order */
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)hdr;

		iplen = sizeof(*ip6);
		memcpy(ip6, ipv6_hdr(skb), iplen);
		ip6->priority = 0xf;
		memset(ip6->flow_lbl, 0xff, sizeof(ip6->flow_lbl));
		ip6->hop_limit = 0xff;
	}
	fixed = sizeof(struct udphdr) + MR_BTH_LEN;
	memcpy(hdr + iplen, udp, fixed);
	((struct udphdr *)(hdr + iplen))->check = (__force __sum16)0xffff;
	hdr[iplen + sizeof(struct udphdr) + 4] = 0xff;

	crc = crc32_le(METAROCE_ICRC_SEED, hdr, iplen + fixed);
	crc = crc32_le(crc, udp + fixed, len - fixed - MR_CRC_LEN);
	return ~crc;
}

/*
 * Whether the ICRC of a received RoCEv2 packet is right.  skb data starts
 * at the UDP header, is linear and holds at least the UDP header, a BTH
 * and the ICRC; an IPv4 header with options is no RoCEv2 packet.
 */
bool metaroce_icrc_ok(const struct sk_buff *skb)
{
	if (ip_hdr(skb)->version == 4 &&
	    ip_hdr(skb)->ihl != sizeof(struct iphdr) / 4)
		return false;
	return metaroce_icrc(skb, skb->data, skb->len) ==
	       get_unaligned_le32(skb->data + skb->len - MR_CRC_LEN);
}

struct metaroce_sock {
	struct list_head list;		/* on metaroce_socks */
	struct net *net;		/* not a reference: see pernet exit */
	unsigned int users;		/* devices; metaroce_socks_lock */
	/* UDP 4793, MetaRoCE-mode RC; NULL once the netns exits. */
	struct socket __rcu *sock;
	/* UDP 4791: UD, GSI and (ud4) RoCEv2-mode RC; NULL if busy. */
	struct socket __rcu *ud4, *ud6;
};

/* Protects metaroce_socks and every metaroce_sock's users and sock. */
static DEFINE_MUTEX(metaroce_socks_lock);
static LIST_HEAD(metaroce_socks);

/* Whether @mdev can carry RoCEv2-mode RC: its namespace got UDP 4791. */
bool metaroce_can_rocev2(const struct metaroce_dev *mdev)
{
	return mdev->sock && rcu_access_pointer(mdev->sock->ud4);
}

/* The socket an RC QP of @mode sends from.  Under RCU. */
static struct socket *metaroce_rc_sock(const struct metaroce_dev *mdev,
				       enum mrc_mode mode)
{
	if (!mdev->sock)
		return NULL;
	return mode == MRC_MODE_ROCEV2 ? rcu_dereference_bh(mdev->sock->ud4) :
					 rcu_dereference_bh(mdev->sock->sock);
}

/* Both wire formats carry the destination QPN in bytes 4..7. */
#define METAROCE_QPN_OFFSET	4
#define METAROCE_MIN_PKT_LEN	(METAROCE_QPN_OFFSET + 4)

/*
 * MetaRoCE packets are ECN-capable (ECT(0)): the core answers CE marks
 * (MR-CC-005).  RoCEv2 mode does not (no DCQCN), so it must not ask
 * switches to mark instead of drop.
 */
static u8 metaroce_tos(const struct metaroce_qp *qp)
{
	return qp->mode == MRC_MODE_METAROCE ? INET_ECN_ECT_0 : 0;
}

/*
 * An RC packet that arrived on the port of wire mode @mode: softirq, under
 * RCU.  Consumes @skb.
 */
static int metaroce_rc_recv(struct sock *sk, struct sk_buff *skb,
			    enum mrc_mode mode)
{
	unsigned int rx_flags = 0;
	struct metaroce_qp *qp;
	const u8 *pkt;
	size_t len;
	u32 qpn;

	if (skb_linearize(skb) ||
	    skb->len < sizeof(struct udphdr) + METAROCE_MIN_PKT_LEN)
		goto drop;
	pkt = skb->data + sizeof(struct udphdr);
	len = skb->len - sizeof(struct udphdr);
	qpn = get_unaligned_be32(pkt + METAROCE_QPN_OFFSET) & MR_PSN_MASK;

	qp = metaroce_qp_get(qpn);
	if (!qp)
		goto drop;
	if (!net_eq(dev_net(qp->mdev->ndev), sock_net(sk))) {
		metaroce_count(qp->mdev, METAROCE_CNT_RX_NO_QP);
		metaroce_qp_put(qp);
		goto drop;
	}
	/*
	 * The peer speaks the other wire mode (MR-COMPAT-011): never hand the
	 * core a packet of the other format.  The requester's retries run
	 * out and it completes with IB_WC_RETRY_EXC_ERR.
	 */
	if (qp->mode != mode) {
		metaroce_count(qp->mdev, METAROCE_CNT_RX_WRONG_TRANSPORT);
		metaroce_qp_put(qp);
		goto drop;
	}
	metaroce_plane_count_rx(qp->mdev, skb->skb_iif);
	/*
	 * RoCEv2 mode: the trailer is the IBTA ICRC over the IP and UDP
	 * headers too, so it is checked here, not by the core, which is
	 * told so (MR-COMPAT-012).  MetaRoCE mode's CRC32C is the core's.
	 */
	if (mode == MRC_MODE_ROCEV2) {
		if (len < MR_BTH_LEN + MR_CRC_LEN) {
			metaroce_count(qp->mdev, METAROCE_CNT_RX_MALFORMED);
			metaroce_qp_put(qp);
			goto drop;
		}
		if (!metaroce_icrc_ok(skb)) {
			metaroce_count(qp->mdev, METAROCE_CNT_RX_BAD_CRC);
			metaroce_qp_put(qp);
			goto drop;
		}
		rx_flags |= MRC_RX_ICRC_OK;
	}
	/* IPv4 only, like the transmit side; the IP header is still there. */
	if (INET_ECN_is_ce(ip_hdr(skb)->tos)) {
		metaroce_count(qp->mdev, METAROCE_CNT_RX_ECN_CE);
		rx_flags |= MRC_RX_CE;
	}
	metaroce_qp_rx(qp, pkt, len, rx_flags);
	metaroce_qp_put(qp);
	consume_skb(skb);
	return 0;

drop:
	/*
	 * Not for a QP we know: nothing to account it to but the netns's
	 * UDP statistics.
	 */
	__UDP_INC_STATS(sock_net(sk), UDP_MIB_INERRORS, 0);
	kfree_skb(skb);
	return 0;
}

/* encap_rcv of the socket on UDP 4793. */
static int metaroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	return metaroce_rc_recv(sk, skb, MRC_MODE_METAROCE);
}

/*
 * encap_rcv of the sockets on UDP 4791: UD datagrams for metaroce_ud.c,
 * RoCEv2-mode RC packets (IPv4 only) for the connection of their QP.
 */
static int metaroce_roce_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	if (skb_linearize(skb) ||
	    skb->len < sizeof(struct udphdr) + MR_BTH_LEN)
		goto drop;
	if (metaroce_is_ud_opcode(skb->data[sizeof(struct udphdr)])) {
		if (!metaroce_ud_rx(skb))
			goto drop;
		consume_skb(skb);
		return 0;
	}
	if (sk->sk_family == AF_INET)
		return metaroce_rc_recv(sk, skb, MRC_MODE_ROCEV2);
drop:
	if (sk->sk_family == AF_INET)
		__UDP_INC_STATS(sock_net(sk), UDP_MIB_INERRORS, 0);
	else
		__UDP6_INC_STATS(sock_net(sk), UDP_MIB_INERRORS, 0);
	kfree_skb(skb);
	return 0;
}

static int metaroce_sock_create(struct net *net, int family, u16 port,
				struct socket **sockp)
{
	struct udp_port_cfg port_cfg = {
		.family = family,
		.local_udp_port = htons(port),
		/* RoCEv2 senders may leave the IPv6 UDP checksum zero. */
		.ipv6_v6only = 1,
	};
	struct udp_tunnel_sock_cfg tun_cfg = {
		.encap_type = 1,
		.encap_rcv = port == MR_ROCEV2_UDP_PORT ?
				     metaroce_roce_encap_recv :
				     metaroce_udp_encap_recv,
	};
	int err;

	if (family == AF_INET)
		port_cfg.local_ip.s_addr = htonl(INADDR_ANY);
	else
		port_cfg.local_ip6 = in6addr_any;
	err = udp_sock_create(net, &port_cfg, sockp);
	if (err)
		return err;
	setup_udp_tunnel_sock(net, *sockp, &tun_cfg);
	return 0;
}

/*
 * The UD sockets of a new metaroce_sock (see the top of the file); a busy
 * port leaves the pointer NULL.
 */
static void metaroce_ud_socks_create(struct metaroce_sock *ms)
{
	struct socket *sock;
	int err;

	err = metaroce_sock_create(ms->net, AF_INET, MR_ROCEV2_UDP_PORT, &sock);
	if (err)
		pr_info("rdma_metaroce: UDP port %u (IPv4) unavailable in this network namespace (%d): no UD, GSI (rdma_cm) or RoCEv2-mode RC over IPv4\n",
			MR_ROCEV2_UDP_PORT, err);
	else
		rcu_assign_pointer(ms->ud4, sock);
	err = metaroce_sock_create(ms->net, AF_INET6, MR_ROCEV2_UDP_PORT,
				   &sock);
	if (err && err != -EAFNOSUPPORT)
		pr_info("rdma_metaroce: UDP port %u (IPv6) unavailable in this network namespace (%d): no UD or GSI over IPv6\n",
			MR_ROCEV2_UDP_PORT, err);
	else if (!err)
		rcu_assign_pointer(ms->ud6, sock);
}

/*
 * Take the sockets of @ms out of service and release them.  The caller
 * holds metaroce_socks_lock and has made @ms unreachable or is the pernet
 * exit; readers use RCU.
 */
static void metaroce_socks_release(struct metaroce_sock *ms)
{
	struct socket *rc, *ud4, *ud6;

	rc = rcu_dereference_protected(ms->sock,
				       lockdep_is_held(&metaroce_socks_lock));
	ud4 = rcu_dereference_protected(ms->ud4,
					lockdep_is_held(&metaroce_socks_lock));
	ud6 = rcu_dereference_protected(ms->ud6,
					lockdep_is_held(&metaroce_socks_lock));
	RCU_INIT_POINTER(ms->sock, NULL);
	RCU_INIT_POINTER(ms->ud4, NULL);
	RCU_INIT_POINTER(ms->ud6, NULL);
	if (!rc && !ud4 && !ud6)
		return;
	synchronize_rcu();
	if (rc)
		udp_tunnel_sock_release(rc);
	if (ud4)
		udp_tunnel_sock_release(ud4);
	if (ud6)
		udp_tunnel_sock_release(ud6);
}

/* Attach @mdev to the socket of its netdev's namespace.  Process context. */
int metaroce_sock_get(struct metaroce_dev *mdev)
{
	struct net *net = dev_net(mdev->ndev);
	struct metaroce_sock *ms;
	struct socket *sock;
	int err = 0;

	mutex_lock(&metaroce_socks_lock);
	list_for_each_entry(ms, &metaroce_socks, list) {
		if (net_eq(ms->net, net) &&
		    rcu_access_pointer(ms->sock)) {
			ms->users++;
			goto out;
		}
	}
	ms = kzalloc(sizeof(*ms), GFP_KERNEL);
	if (!ms) {
		err = -ENOMEM;
		goto unlock;
	}
	err = metaroce_sock_create(net, AF_INET, MR_UDP_PORT, &sock);
	if (err) {
		kfree(ms);
		goto unlock;
	}
	ms->net = net;
	ms->users = 1;
	rcu_assign_pointer(ms->sock, sock);
	metaroce_ud_socks_create(ms);
	list_add(&ms->list, &metaroce_socks);
out:
	mdev->sock = ms;
unlock:
	mutex_unlock(&metaroce_socks_lock);
	return err;
}

void metaroce_sock_put(struct metaroce_dev *mdev)
{
	struct metaroce_sock *ms = mdev->sock;

	if (!ms)
		return;
	mdev->sock = NULL;
	mutex_lock(&metaroce_socks_lock);
	if (--ms->users) {
		mutex_unlock(&metaroce_socks_lock);
		return;
	}
	list_del(&ms->list);
	metaroce_socks_release(ms);
	mutex_unlock(&metaroce_socks_lock);
	/* metaroce_xmit() reads ms->sock under RCU. */
	kfree_rcu_mightsleep(ms);
}

/*
 * Put the UDP and IP headers of @cb in front of the RoCEv2 datagram @skb
 * (UDP payload from the BTH to the ICRC slot), routed by @dst, fill in the
 * ICRC, which covers those headers, and send it from @sk: one place for
 * UD datagrams and RoCEv2-mode RC packets (MR-COMPAT-010, MR-COMPAT-012).
 * Consumes @skb.  Under RCU (@sk).
 */
static int metaroce_roce_out(struct net *net, struct sock *sk,
			     struct sk_buff *skb, struct dst_entry *dst,
			     const struct metaroce_ud_cb *cb)
{
	struct udphdr *uh;

	skb_dst_set(skb, dst);
	memset(skb->cb, 0, sizeof(skb->cb));	/* IPCB / IP6CB from here */

	uh = skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh->source = htons(cb->sport);
	uh->dest = htons(MR_ROCEV2_UDP_PORT);
	uh->len = htons(skb->len);
	uh->check = 0;
	if (!cb->ipv6) {
		struct iphdr *iph = skb_push(skb, sizeof(*iph));

		skb_reset_network_header(skb);
		iph->version = 4;
		iph->ihl = sizeof(*iph) / 4;
		iph->tos = cb->traffic_class;
		iph->tot_len = htons(skb->len);
		iph->frag_off = htons(IP_DF);
		iph->ttl = cb->hop_limit ?: ip4_dst_hoplimit(dst);
		iph->protocol = IPPROTO_UDP;
		iph->saddr = cb->saddr.s6_addr32[3];
		iph->daddr = cb->daddr.s6_addr32[3];
		/* The ICRC covers the identification: choose it now. */
		__ip_select_ident(net, iph, 1);
		skb->protocol = htons(ETH_P_IP);
	} else {
		struct ipv6hdr *ip6h = skb_push(skb, sizeof(*ip6h));

		skb_reset_network_header(skb);
		ip6_flow_hdr(ip6h, cb->traffic_class, htonl(cb->flow_label));
		ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
		ip6h->nexthdr = IPPROTO_UDP;
		ip6h->hop_limit = cb->hop_limit ?: ip6_dst_hoplimit(dst);
		ip6h->saddr = cb->saddr;
		ip6h->daddr = cb->daddr;
		skb->protocol = htons(ETH_P_IPV6);
	}
	put_unaligned_le32(metaroce_icrc(skb, (u8 *)uh, ntohs(uh->len)),
			   skb_tail_pointer(skb) - MR_CRC_LEN);
	if (cb->ipv6) {
		/* IPv6 needs a UDP checksum; it covers the ICRC. */
		udp6_set_csum(false, skb, &cb->saddr, &cb->daddr,
			      ntohs(uh->len));
		return ip6_local_out(net, sk, skb);
	}
	return ip_local_out(net, sk, skb);
}

/*
 * Send the packets on @out built for @qp.  Any context, no QP lock.  The
 * packet's path picks the plane (metaroce_plane.c) and, with the QP's
 * base, the UDP source port.  Plane 0 sends from the QP's GID address,
 * the others from the address routing picks for their netdev.
 *
 * A plane's link goes down before the netdev notifier takes its paths out
 * of service (dev_close() clears __LINK_STATE_START, then notifies), and
 * packets the core built just before are still on @out: those are dropped
 * and counted as tx_link_down, not as errors, since the core recovers
 * them like any loss (its path state catches up with the notifier).
 */
void metaroce_xmit(struct metaroce_qp *qp, struct sk_buff_head *out)
{
	struct metaroce_dev *mdev = qp->mdev;
	struct sk_buff *skb;
	struct socket *sock;
	struct rtable *rt;
	int ret;

	if (skb_queue_empty(out))
		return;
	rcu_read_lock_bh();
	sock = metaroce_rc_sock(mdev, qp->mode);
	while ((skb = __skb_dequeue(out))) {
		u32 path = METAROCE_SKB_CB(skb)->path;
		struct metaroce_plane *plane = metaroce_plane_for_path(mdev, path);
		struct net_device *ndev;
		struct flowi4 fl4 = {
			.flowi4_proto = IPPROTO_UDP,
			.daddr = qp->daddr,
		};
		u16 sport = qp->src_port_base + path;

		if (!sock || !plane)
			goto err;
		ndev = plane->ndev;
		if (!netif_running(ndev) || !netif_carrier_ok(ndev)) {
			metaroce_count(mdev, METAROCE_CNT_TX_LINK_DOWN);
			metaroce_plane_count(plane, METAROCE_PCNT_TX_LINK_DOWN);
			kfree_skb(skb);
			continue;
		}
		fl4.flowi4_oif = ndev->ifindex;
		if (ndev == mdev->ndev)
			fl4.saddr = qp->saddr;
		rt = ip_route_output_key(dev_net(ndev), &fl4);
		if (IS_ERR(rt))
			goto err;
		skb->ignore_df = 1;
		if (qp->mode == MRC_MODE_ROCEV2) {
			/* The ICRC slot is ours to fill (MR-COMPAT-012). */
			struct metaroce_ud_cb cb = { .sport = sport };

			ipv6_addr_set_v4mapped(fl4.saddr, &cb.saddr);
			ipv6_addr_set_v4mapped(fl4.daddr, &cb.daddr);
			cb.traffic_class = metaroce_tos(qp);
			/* net_xmit_eval() evaluates its argument twice. */
			ret = metaroce_roce_out(dev_net(ndev), sock->sk, skb,
						&rt->dst, &cb);
			if (net_xmit_eval(ret)) {
				skb = NULL;	/* consumed */
				goto err;
			}
		} else {
			/*
			 * UDP checksum 0 (nocheck), as RoCEv2 and VXLAN send
			 * over IPv4: the CRC32C already covers every byte the
			 * transport reads (MR-WIRE-001, MR-WIRE-006).  A
			 * netdev without checksum offload would otherwise pass
			 * over each packet once more on either end.
			 */
			udp_tunnel_xmit_skb(rt, sock->sk, skb, fl4.saddr,
					    fl4.daddr, metaroce_tos(qp),
					    ip4_dst_hoplimit(&rt->dst),
					    htons(IP_DF), htons(sport),
					    htons(MR_UDP_PORT), false, true);
		}
		metaroce_count(mdev, METAROCE_CNT_TX_PACKETS);
		metaroce_plane_count(plane, METAROCE_PCNT_TX_PACKETS);
		continue;
err:
		metaroce_count(mdev, METAROCE_CNT_TX_ERRORS);
		if (plane)
			metaroce_plane_count(plane, METAROCE_PCNT_TX_ERRORS);
		kfree_skb(skb);
	}
	rcu_read_unlock_bh();
}

/*
 * A datagram built by metaroce_ud.c (UDP payload from the BTH to the
 * ICRC, addressing in METAROCE_UD_CB): route it and send it.  Process
 * context (the QP's ud_tx_work).
 */
void metaroce_ud_xmit(struct metaroce_dev *mdev, struct sk_buff *skb)
{
	struct metaroce_ud_cb cb = *METAROCE_UD_CB(skb);
	struct net_device *ndev = mdev->ndev;
	struct net *net = dev_net(ndev);
	struct dst_entry *dst;
	struct socket *sock = NULL;
	int err;

	rcu_read_lock();
	if (mdev->sock)
		sock = cb.ipv6 ? rcu_dereference(mdev->sock->ud6) :
				 rcu_dereference(mdev->sock->ud4);
	if (!sock)
		goto drop;
	if (!cb.ipv6) {
		struct flowi4 fl4 = {
			.flowi4_oif = ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.daddr = cb.daddr.s6_addr32[3],
			.saddr = cb.saddr.s6_addr32[3],
		};
		struct rtable *rt = ip_route_output_key(net, &fl4);

		if (IS_ERR(rt))
			goto drop;
		dst = &rt->dst;
	} else {
		struct flowi6 fl6 = {
			.flowi6_oif = ndev->ifindex,
			.flowi6_proto = IPPROTO_UDP,
			.daddr = cb.daddr,
			.saddr = cb.saddr,
		};

		dst = ipv6_stub->ipv6_dst_lookup_flow(net, sock->sk, &fl6,
						      NULL);
		if (IS_ERR(dst))
			goto drop;
	}
	err = metaroce_roce_out(net, sock->sk, skb, dst, &cb);
	rcu_read_unlock();
	metaroce_count(mdev, net_xmit_eval(err) ? METAROCE_CNT_TX_ERRORS :
						  METAROCE_CNT_TX_PACKETS);
	return;
drop:
	rcu_read_unlock();
	metaroce_count(mdev, METAROCE_CNT_TX_ERRORS);
	kfree_skb(skb);
}

/* A namespace is going away: its sockets go with it. */
static void __net_exit metaroce_net_ns_exit(struct net *net)
{
	struct metaroce_sock *ms;

	mutex_lock(&metaroce_socks_lock);
	list_for_each_entry(ms, &metaroce_socks, list)
		if (net_eq(ms->net, net))
			metaroce_socks_release(ms);
	mutex_unlock(&metaroce_socks_lock);
}

static struct pernet_operations metaroce_net_ops = {
	.exit = metaroce_net_ns_exit,
};

int metaroce_net_init(void)
{
	int err;

	metaroce_rx_batch_init();
	err = register_pernet_subsys(&metaroce_net_ops);
	if (err)
		return err;
	err = register_netdevice_notifier(&metaroce_netdev_notifier);
	if (err)
		unregister_pernet_subsys(&metaroce_net_ops);
	return err;
}

void metaroce_net_exit(void)
{
	unregister_netdevice_notifier(&metaroce_netdev_notifier);
	unregister_pernet_subsys(&metaroce_net_ops);
	metaroce_rx_batch_exit();
}
