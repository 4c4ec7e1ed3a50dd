// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// open_by_name(NAME): the test programs open a device by its name
// ("mr0"); nullptr if libibverbs lists none of that name or opening fails
// (errno from ibv_open_device()).
#ifndef METAROCE_TESTS_OPEN_DEVICE_H
#define METAROCE_TESTS_OPEN_DEVICE_H

#include <string>

#include <infiniband/verbs.h>

inline ibv_context *open_by_name(const std::string &name)
{
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	ibv_context *ctx = nullptr;

	if (!list)
		return nullptr;
	for (int i = 0; i < num; i++)
		if (name == ibv_get_device_name(list[i]))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif
