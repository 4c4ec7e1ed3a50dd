/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The only place the core touches its environment: fixed-width types,
 * memcpy/memset, errno values and big-endian load/store helpers, mapped to
 * <linux/...> in the kernel and to the C library headers in userspace.
 */
#ifndef MRC_PLATFORM_H
#define MRC_PLATFORM_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/math64.h>
#define MRC_U64_MAX	U64_MAX
#define mrc_div64(a, b)	div64_u64(a, b)
#else
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#define MRC_U64_MAX	UINT64_MAX
#define mrc_div64(a, b)	((a) / (b))
#endif

/*
 * Byte-wise accessors: the core parses untrusted, possibly unaligned
 * buffers, so it never casts them to wire structs.
 */
static inline u16 mrc_get_be16(const u8 *p)
{
	return (u16)((p[0] << 8) | p[1]);
}

static inline u32 mrc_get_be24(const u8 *p)
{
	return ((u32)p[0] << 16) | ((u32)p[1] << 8) | p[2];
}

static inline u32 mrc_get_be32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

static inline u64 mrc_get_be64(const u8 *p)
{
	return ((u64)mrc_get_be32(p) << 32) | mrc_get_be32(p + 4);
}

static inline void mrc_put_be16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void mrc_put_be32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void mrc_put_be64(u8 *p, u64 v)
{
	mrc_put_be32(p, v >> 32);
	mrc_put_be32(p + 4, (u32)v);
}

#endif /* MRC_PLATFORM_H */
