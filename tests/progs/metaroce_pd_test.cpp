// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of the MetaRoCE provider through the public libibverbs API:
 * open the device, query it, allocate and free protection domains, and check
 * the error paths.  Whether a PD really exists in the kernel is checked
 * independently of libibverbs, by counting the device's PDs in the kernel's
 * resource tracker (`rdma resource show pd dev <name>`).
 *
 *   metaroce_pd_test [--device NAME] [--count N] [--rounds R] [--exhaust]
 *
 * --exhaust also allocates PDs until the device refuses (max_pd of them).
 *
 * Prints "FAIL: ..." lines and exits 1 on any failed check; prints
 * measurements as "metric <name> <value> <unit>" lines; exits 0 otherwise.
 */
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <infiniband/verbs.h>
#include "check.h"

namespace {

int failures;


/* PDs of the device in the kernel's resource tracker, -1 if unreadable. */
long kernel_pd_count(const std::string &dev)
{
	std::string cmd = "rdma resource show pd dev " + dev + " 2>/dev/null";
	FILE *p = popen(cmd.c_str(), "r");
	char line[512];
	long n = 0;

	if (!p)
		return -1;
	/*
	 * One "dev <name> ..." line per PD, kernel consumers' included
	 * (ib_mad's holds one of max_pd too); callers compare with a base.
	 */
	while (std::fgets(line, sizeof(line), p))
		if (std::strncmp(line, "dev ", 4) == 0)
			n++;
	return pclose(p) == 0 ? n : -1;
}

ibv_context *open_by_name(const std::string &name)
{
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	ibv_context *ctx = nullptr;

	if (!list) {
		std::printf("FAIL: ibv_get_device_list: %s\n", std::strerror(errno));
		failures++;
		return nullptr;
	}
	for (int i = 0; i < num; i++) {
		if (name == ibv_get_device_name(list[i])) {
			ctx = ibv_open_device(list[i]);
			CHECK(ctx, "ibv_open_device(%s): %s", name.c_str(),
			      std::strerror(errno));
			break;
		}
	}
	if (!ctx && failures == 0) {
		std::printf("FAIL: no device %s among %d\n", name.c_str(), num);
		failures++;
	}
	ibv_free_device_list(list);
	return ctx;
}

void check_queries(ibv_context *ctx, uint32_t *max_pd)
{
	ibv_device_attr_ex attr = {};
	ibv_port_attr port = {};
	int ret;

	ret = ibv_query_device_ex(ctx, nullptr, &attr);
	CHECK(ret == 0, "ibv_query_device_ex: %s", std::strerror(ret));
	CHECK(attr.orig_attr.phys_port_cnt >= 1, "phys_port_cnt %u",
	      attr.orig_attr.phys_port_cnt);
	CHECK(attr.orig_attr.max_pd > 0, "max_pd %d", attr.orig_attr.max_pd);
	*max_pd = attr.orig_attr.max_pd > 0 ? attr.orig_attr.max_pd : 0;

	ret = ibv_query_port(ctx, 1, &port);
	CHECK(ret == 0, "ibv_query_port(1): %s", std::strerror(ret));
	CHECK(port.state == IBV_PORT_ACTIVE, "port 1 state %s",
	      ibv_port_state_str(port.state));
	CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u",
	      port.link_layer);

	/* Ports are numbered from 1; the kernel must refuse the others. */
	ret = ibv_query_port(ctx, 0, &port);
	CHECK(ret != 0, "ibv_query_port(0) succeeded");
	ret = ibv_query_port(ctx, attr.orig_attr.phys_port_cnt + 1, &port);
	CHECK(ret != 0, "ibv_query_port(%u) succeeded",
	      attr.orig_attr.phys_port_cnt + 1);
}

void check_pds(ibv_context *ctx, const std::string &dev, unsigned count)
{
	long base = kernel_pd_count(dev);
	std::vector<ibv_pd *> pds;
	std::set<uint32_t> handles;

	CHECK(base >= 0, "cannot read the kernel's PDs of %s", dev.c_str());
	auto start = std::chrono::steady_clock::now();
	for (unsigned i = 0; i < count; i++) {
		ibv_pd *pd = ibv_alloc_pd(ctx);

		CHECK(pd, "ibv_alloc_pd #%u: %s", i, std::strerror(errno));
		if (!pd)
			break;
		CHECK(pd->context == ctx, "PD #%u has the wrong context", i);
		handles.insert(pd->handle);
		pds.push_back(pd);
	}
	std::chrono::duration<double> alloc_s = std::chrono::steady_clock::now() - start;
	CHECK(handles.size() == pds.size(), "%zu distinct handles for %zu PDs",
	      handles.size(), pds.size());
	long live = kernel_pd_count(dev);
	CHECK(live == base + static_cast<long>(pds.size()),
	      "kernel has %ld PDs, expected %ld", live,
	      base + static_cast<long>(pds.size()));

	uint32_t stale = pds.empty() ? 0 : pds.back()->handle;
	start = std::chrono::steady_clock::now();
	for (ibv_pd *pd : pds) {
		int ret = ibv_dealloc_pd(pd);

		CHECK(ret == 0, "ibv_dealloc_pd: %s", std::strerror(ret));
	}
	std::chrono::duration<double> free_s = std::chrono::steady_clock::now() - start;
	long after = kernel_pd_count(dev);
	CHECK(after == base, "kernel has %ld PDs after freeing, expected %ld",
	      after, base);
	std::printf("info kernel PD count: %ld before, %ld with %zu allocated, %ld after freeing\n",
		    base, live, pds.size(), after);
	if (!pds.empty() && alloc_s.count() > 0 && free_s.count() > 0)
		std::printf("metric pd_alloc_rate %.0f PDs/s, pd_dealloc_rate %.0f PDs/s (%zu live PDs)\n",
			    pds.size() / alloc_s.count(), pds.size() / free_s.count(),
			    pds.size());

	/*
	 * A handle that no longer exists: the kernel must refuse it and the
	 * provider must return the error without touching the (stack) PD.
	 */
	ibv_pd fake = {};
	fake.context = ctx;
	fake.handle = stale;
	int ret = ibv_dealloc_pd(&fake);
	CHECK(ret != 0, "ibv_dealloc_pd of freed handle %u succeeded", stale);
	CHECK(kernel_pd_count(dev) == base, "stale dealloc changed the PD count");
}

/* PDs allocated from several threads at once on one context. */
void check_concurrent_pds(ibv_context *ctx, const std::string &dev)
{
	constexpr unsigned threads = 4, per_thread = 64;
	long base = kernel_pd_count(dev);
	std::vector<std::vector<ibv_pd *>> pds(threads);
	std::vector<std::thread> workers;

	for (unsigned t = 0; t < threads; t++)
		workers.emplace_back([ctx, &mine = pds[t]] {
			for (unsigned i = 0; i < per_thread; i++)
				if (ibv_pd *pd = ibv_alloc_pd(ctx))
					mine.push_back(pd);
		});
	for (auto &w : workers)
		w.join();

	std::set<uint32_t> handles;
	size_t total = 0;
	for (auto &mine : pds) {
		total += mine.size();
		for (ibv_pd *pd : mine)
			handles.insert(pd->handle);
	}
	CHECK(total == threads * per_thread, "%zu of %u concurrent PDs", total,
	      threads * per_thread);
	CHECK(handles.size() == total, "%zu distinct handles for %zu PDs",
	      handles.size(), total);
	CHECK(kernel_pd_count(dev) == base + static_cast<long>(total),
	      "kernel does not list the concurrent PDs");
	for (auto &mine : pds)
		for (ibv_pd *pd : mine)
			CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	CHECK(kernel_pd_count(dev) == base, "concurrent PDs not freed");
}

/*
 * Allocate until the device refuses: that must happen exactly at max_pd
 * (counting PDs others hold), fail cleanly with an errno, and leave the
 * device usable once PDs are freed.
 */
void check_pd_exhaustion(ibv_context *ctx, const std::string &dev, uint32_t max_pd)
{
	long base = kernel_pd_count(dev);
	std::vector<ibv_pd *> pds;
	int err = 0;

	pds.reserve(max_pd);
	auto start = std::chrono::steady_clock::now();
	while (pds.size() <= max_pd) {
		errno = 0;
		ibv_pd *pd = ibv_alloc_pd(ctx);
		if (!pd) {
			err = errno;
			break;
		}
		pds.push_back(pd);
	}
	CHECK(static_cast<long>(pds.size()) == max_pd - base,
	      "allocated %zu PDs, max_pd %u with %ld held by others", pds.size(),
	      max_pd, base);
	CHECK(err != 0, "failed allocation did not set errno");
	std::chrono::duration<double> fill_s = std::chrono::steady_clock::now() - start;
	std::printf("info PD %zu refused with errno %d (%s) after %.2f s\n",
		    pds.size() + 1, err, std::strerror(err), fill_s.count());
	/* (Not counted while full: listing 32k PDs takes the rdma tool a minute.) */

	for (ibv_pd *pd : pds)
		CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	ibv_pd *pd = ibv_alloc_pd(ctx);
	CHECK(pd, "no PD after freeing the exhausted ones: %s", std::strerror(errno));
	if (pd)
		CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	CHECK(kernel_pd_count(dev) == base, "PDs left after exhaustion");
}

void check_unsupported(ibv_context *ctx)
{
	ibv_alloc_dm_attr dm_attr = {};
	dm_attr.length = 64;

	errno = 0;
	ibv_dm *dm = ibv_alloc_dm(ctx, &dm_attr);
	CHECK(!dm && errno == EOPNOTSUPP, "ibv_alloc_dm: %p errno %d", (void *)dm,
	      errno);
	if (dm)
		ibv_free_dm(dm);
}

/* Closing a context with live PDs: the kernel must release them. */
void check_close_with_live_pds(const std::string &dev)
{
	long base = kernel_pd_count(dev);
	ibv_context *ctx = open_by_name(dev);
	unsigned live = 0;

	if (!ctx)
		return;
	for (unsigned i = 0; i < 16; i++)
		if (ibv_alloc_pd(ctx))
			live++;
	CHECK(live == 16, "allocated %u of 16 PDs", live);
	CHECK(kernel_pd_count(dev) == base + live, "kernel does not list the PDs");
	/* The PD wrappers leak here by design: the application "crashed". */
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	CHECK(kernel_pd_count(dev) == base, "kernel has %ld PDs after close, expected %ld",
	      kernel_pd_count(dev), base);
}

void measure_pd_rate(ibv_context *ctx, unsigned rounds)
{
	auto start = std::chrono::steady_clock::now();
	unsigned done = 0;

	for (; done < rounds; done++) {
		ibv_pd *pd = ibv_alloc_pd(ctx);

		if (!pd || ibv_dealloc_pd(pd)) {
			CHECK(false, "alloc/dealloc round %u failed", done);
			break;
		}
	}
	std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
	if (done && s.count() > 0)
		std::printf("metric pd_alloc_dealloc_rate %.0f pairs/s (%u pairs in %.3f s)\n",
			    done / s.count(), done, s.count());
}

unsigned parse_uint(const char *s)
{
	char *end;
	unsigned long v = std::strtoul(s, &end, 0);

	if (*s == '\0' || *end != '\0' || v > 1000000) {
		std::fprintf(stderr, "bad number '%s'\n", s);
		std::exit(2);
	}
	return static_cast<unsigned>(v);
}

} // namespace

int main(int argc, char **argv)
{
	std::string dev = "mr0";
	unsigned count = 1000, rounds = 2000;
	uint32_t max_pd = 0;
	bool exhaust = false;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];

		if (a == "--device" && i + 1 < argc)
			dev = argv[++i];
		else if (a == "--count" && i + 1 < argc)
			count = parse_uint(argv[++i]);
		else if (a == "--rounds" && i + 1 < argc)
			rounds = parse_uint(argv[++i]);
		else if (a == "--exhaust")
			exhaust = true;
		else {
			std::fprintf(stderr,
				     "usage: %s [--device NAME] [--count N] [--rounds R] [--exhaust]\n",
				     argv[0]);
			return 2;
		}
	}

	ibv_context *ctx = open_by_name(dev);
	if (!ctx)
		return 1;
	check_queries(ctx, &max_pd);
	if (max_pd && count > max_pd / 2)
		count = max_pd / 2; /* leave room for other users of the device */
	check_pds(ctx, dev, count);
	check_concurrent_pds(ctx, dev);
	if (exhaust)
		check_pd_exhaustion(ctx, dev, max_pd);
	check_unsupported(ctx);
	measure_pd_rate(ctx, rounds);
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	check_close_with_live_pds(dev);

	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
