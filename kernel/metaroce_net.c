// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: the link between a device and its netdev.  The port state and
 * MTU are derived from the netdev whenever they are asked for; the netdev
 * notifier only announces changes to ib_core and tears the device down
 * when its netdev goes away.
 */

#include <linux/rtnetlink.h>

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

int metaroce_net_init(void)
{
	return register_netdevice_notifier(&metaroce_netdev_notifier);
}

void metaroce_net_exit(void)
{
	unregister_netdevice_notifier(&metaroce_netdev_notifier);
}
