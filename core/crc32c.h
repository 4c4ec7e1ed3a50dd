/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
#ifndef MRC_CRC32C_H
#define MRC_CRC32C_H

#include "mrc_platform.h"

/* Raw update: no pre/post inversion (chain partial buffers with this). */
u32 mrc_crc32c_update(u32 crc, const void *data, size_t len);
/* Standard CRC32C of one buffer: init 0xffffffff, final xor 0xffffffff. */
u32 mrc_crc32c(const void *data, size_t len);

#endif /* MRC_CRC32C_H */
