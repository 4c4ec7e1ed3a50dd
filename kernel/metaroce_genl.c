// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: the "metaroce" generic netlink family, through which
 * metaroce-plane(8) lists, adds, removes and takes out of service the
 * planes of a device.  The commands and attributes are in
 * include/uapi/rdma/metaroce-netlink.h.
 *
 * Locking: the changing commands run under RTNL (which orders them against
 * the netdev notifier and keeps the named netdev registered) and
 * metaroce_devices_lock, and hold a reference on the registered device
 * (ib_device_try_get()) while they act on it; the dump takes
 * metaroce_devices_lock only.  Traffic keeps running meanwhile: see
 * "Locking" in metaroce_plane.c for how the data path sees the change.
 */

#include <linux/rtnetlink.h>
#include <net/genetlink.h>

#include "metaroce.h"

static const struct nla_policy metaroce_genl_policy[METAROCE_ATTR_MAX + 1] = {
	[METAROCE_ATTR_DEV_NAME] = { .type = NLA_NUL_STRING,
				     .len = IB_DEVICE_NAME_MAX - 1 },
	[METAROCE_ATTR_IFNAME] = { .type = NLA_NUL_STRING, .len = IFNAMSIZ - 1 },
	[METAROCE_ATTR_ADMIN_UP] = NLA_POLICY_MAX(NLA_U8, 1),
};

static struct genl_family metaroce_genl_family;

static int metaroce_plane_fill(struct sk_buff *skb, u32 portid, u32 seq,
			       int flags, struct metaroce_dev *mdev,
			       struct metaroce_plane *plane)
{
	static const u16 counter_attrs[METAROCE_PLANE_NUM_COUNTERS] = {
		[METAROCE_PCNT_TX_PACKETS] = METAROCE_ATTR_TX_PACKETS,
		[METAROCE_PCNT_TX_ERRORS] = METAROCE_ATTR_TX_ERRORS,
		[METAROCE_PCNT_RX_PACKETS] = METAROCE_ATTR_RX_PACKETS,
		[METAROCE_PCNT_PATHS_DOWN] = METAROCE_ATTR_PATHS_DOWN,
		[METAROCE_PCNT_PATHS_UP] = METAROCE_ATTR_PATHS_UP,
		[METAROCE_PCNT_TX_LINK_DOWN] = METAROCE_ATTR_TX_LINK_DOWN,
	};
	void *hdr;
	int c;

	hdr = genlmsg_put(skb, portid, seq, &metaroce_genl_family, flags,
			  METAROCE_CMD_PLANE_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(skb, METAROCE_ATTR_DEV_NAME,
			   dev_name(&mdev->ib_dev.dev)) ||
	    nla_put_string(skb, METAROCE_ATTR_IFNAME, plane->ndev->name) ||
	    nla_put_u32(skb, METAROCE_ATTR_IFINDEX, plane->ndev->ifindex) ||
	    nla_put_u32(skb, METAROCE_ATTR_PLANE_ID, plane - mdev->planes) ||
	    nla_put_u8(skb, METAROCE_ATTR_ADMIN_UP, plane->admin_up) ||
	    nla_put_u8(skb, METAROCE_ATTR_OPER_UP,
		       metaroce_port_state(plane->ndev) == IB_PORT_ACTIVE))
		goto cancel;
	for (c = 0; c < METAROCE_PLANE_NUM_COUNTERS; c++)
		if (nla_put_u64_64bit(skb, counter_attrs[c],
				      atomic64_read(&plane->counters[c]),
				      METAROCE_ATTR_PAD))
			goto cancel;
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/*
 * One message per plane of every device, in device list and plane id
 * order; cb->args[0] and [1] are the device and plane to resume at.
 */
static int metaroce_genl_plane_dump(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	struct metaroce_dev *mdev;
	long dev_idx = 0, plane_idx;

	mutex_lock(&metaroce_devices_lock);
	list_for_each_entry(mdev, &metaroce_devices, list) {
		if (dev_idx++ < cb->args[0])
			continue;
		for (plane_idx = cb->args[1]; plane_idx < METAROCE_MAX_PLANES;
		     plane_idx++) {
			struct metaroce_plane *plane = &mdev->planes[plane_idx];

			if (!plane->ndev)
				continue;
			if (metaroce_plane_fill(skb,
						NETLINK_CB(cb->skb).portid,
						cb->nlh->nlmsg_seq, NLM_F_MULTI,
						mdev, plane)) {
				cb->args[1] = plane_idx;
				goto out;
			}
		}
		cb->args[0] = dev_idx;
		cb->args[1] = 0;
	}
out:
	mutex_unlock(&metaroce_devices_lock);
	return skb->len;
}

enum metaroce_genl_change { METAROCE_ADD, METAROCE_DEL, METAROCE_SET };

/* ADD, DEL and SET: find the device and the netdev, then act. */
static int metaroce_genl_change(struct genl_info *info,
				enum metaroce_genl_change what)
{
	struct nlattr **attrs = info->attrs;
	struct metaroce_dev *mdev, *found = NULL;
	struct net_device *ndev;
	int err;

	if (!attrs[METAROCE_ATTR_DEV_NAME] || !attrs[METAROCE_ATTR_IFNAME]) {
		NL_SET_ERR_MSG(info->extack, "device and netdev names required");
		return -EINVAL;
	}
	if (what == METAROCE_SET && !attrs[METAROCE_ATTR_ADMIN_UP]) {
		NL_SET_ERR_MSG(info->extack, "admin state required");
		return -EINVAL;
	}

	rtnl_lock();
	mutex_lock(&metaroce_devices_lock);
	list_for_each_entry(mdev, &metaroce_devices, list) {
		if (!nla_strcmp(attrs[METAROCE_ATTR_DEV_NAME],
				dev_name(&mdev->ib_dev.dev))) {
			found = mdev;
			break;
		}
	}
	if (!found || !ib_device_try_get(&found->ib_dev)) {
		NL_SET_ERR_MSG(info->extack, "no such MetaRoCE device");
		err = -ENODEV;
		goto unlock;
	}
	ndev = __dev_get_by_name(genl_info_net(info),
				 nla_data(attrs[METAROCE_ATTR_IFNAME]));
	if (!ndev) {
		NL_SET_ERR_MSG(info->extack, "no such netdev");
		err = -ENODEV;
		goto put;
	}
	switch (what) {
	case METAROCE_ADD:
		err = metaroce_plane_add(found, ndev);
		break;
	case METAROCE_DEL:
		err = metaroce_plane_del(found, ndev);
		break;
	default:
		err = metaroce_plane_set_admin(found, ndev,
					       nla_get_u8(attrs[METAROCE_ATTR_ADMIN_UP]));
		break;
	}
put:
	ib_device_put(&found->ib_dev);
unlock:
	mutex_unlock(&metaroce_devices_lock);
	rtnl_unlock();
	return err;
}

static int metaroce_genl_plane_add(struct sk_buff *skb, struct genl_info *info)
{
	return metaroce_genl_change(info, METAROCE_ADD);
}

static int metaroce_genl_plane_del(struct sk_buff *skb, struct genl_info *info)
{
	return metaroce_genl_change(info, METAROCE_DEL);
}

static int metaroce_genl_plane_set(struct sk_buff *skb, struct genl_info *info)
{
	return metaroce_genl_change(info, METAROCE_SET);
}

static const struct genl_small_ops metaroce_genl_ops[] = {
	{
		.cmd = METAROCE_CMD_PLANE_GET,
		.dumpit = metaroce_genl_plane_dump,
	},
	{
		.cmd = METAROCE_CMD_PLANE_ADD,
		.doit = metaroce_genl_plane_add,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = METAROCE_CMD_PLANE_DEL,
		.doit = metaroce_genl_plane_del,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = METAROCE_CMD_PLANE_SET,
		.doit = metaroce_genl_plane_set,
		.flags = GENL_ADMIN_PERM,
	},
};

static struct genl_family metaroce_genl_family __ro_after_init = {
	.name = METAROCE_GENL_NAME,
	.version = METAROCE_GENL_VERSION,
	.maxattr = METAROCE_ATTR_MAX,
	.policy = metaroce_genl_policy,
	.netnsok = true,
	.module = THIS_MODULE,
	.small_ops = metaroce_genl_ops,
	.n_small_ops = ARRAY_SIZE(metaroce_genl_ops),
	.resv_start_op = METAROCE_CMD_PLANE_SET + 1,
};

int metaroce_genl_init(void)
{
	return genl_register_family(&metaroce_genl_family);
}

void metaroce_genl_exit(void)
{
	genl_unregister_family(&metaroce_genl_family);
}
