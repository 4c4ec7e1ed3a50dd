#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Cross-check verbs_provider_abi.h against rdma-core's own driver.h.

    abi-layout-check.py DRIVER_H

DRIVER_H is libibverbs/driver.h of the rdma-core release libibverbs comes
from, e.g. from a clone of github.com/linux-rdma/rdma-core:
    git -C rdma-core show v44.0:libibverbs/driver.h > /tmp/driver.h

The upstream structure definitions are extracted into a temporary directory
(renamed up_<name>, nothing of them enters this tree), compiled next to ours,
and the size and every member offset of each structure are compared.  Exits 0
if all agree, 1 on a mismatch (including a member ours lacks, which fails the
compile), 2 on bad usage or a structure missing from DRIVER_H.
"""
import os
import re
import subprocess
import sys
import tempfile

STRUCTS = ["verbs_match_ent", "verbs_sysfs_dev", "verbs_device_ops",
           "verbs_device", "verbs_context_ops", "verbs_qp"]
# Members inside driver.h's anonymous union of verbs_match_ent.
UNION_MEMBERS = {"verbs_match_ent": {"modalias": "u.modalias",
                                     "driver_id": "u.driver_id"}}
# Members of anonymous unions, which members() does not name: the
# ibv_qp/ibv_qp_ex a provider fills in for the ibv_wr_* API.
EXTRA_MEMBERS = {"verbs_qp": ["qp", "qp_ex", "qp_ex.wr_id",
                              "qp_ex.wr_start", "qp_ex.wr_abort",
                              "qp_ex.wr_atomic_write"]}
# Enumerators whose values we restate (upstream's, renamed up_<name>).
ENUMS = {"verbs_qp_mask": ["VERBS_QP_XRCD", "VERBS_QP_EX"]}
HERE = os.path.dirname(os.path.abspath(__file__))


def members(body):
    """Member names of a struct body, in declaration order."""
    names = []
    depth = 0
    stmt = ""
    for ch in body:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == ";" and depth == 0:
            stmt = stmt.strip()
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", stmt)
            if m is None:
                m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", stmt)
            if m:
                names.append(m.group(1))
            stmt = ""
        else:
            stmt += ch
    return names


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = open(sys.argv[1]).read()
    upstream = ["#include <stddef.h>", "#include <stdint.h>",
                "#include <stdbool.h>", "#include <stdatomic.h>",
                "#include <time.h>", "#include <sys/types.h>",
                "#include <infiniband/verbs.h>",
                "struct list_node { struct list_node *next, *prev; };",
                "struct verbs_sysfs_dev; struct verbs_device; struct verbs_mr;",
                "struct verbs_xrcd;"]
    checks = []
    for name in STRUCTS:
        m = re.search(r"^struct %s \{(.*?)^\};" % name, src, re.S | re.M)
        if m is None:
            print("struct %s not found in %s" % (name, sys.argv[1]))
            return 2
        upstream.append("struct up_%s {%s};" % (name, m.group(1)))
        checks.append('CHECK_SIZE(%s);' % name)
        for mem in members(m.group(1)) + EXTRA_MEMBERS.get(name, []):
            mem = UNION_MEMBERS.get(name, {}).get(mem, mem)
            checks.append('CHECK_OFF(%s, %s);' % (name, mem))
    for name, enumerators in ENUMS.items():
        m = re.search(r"^enum %s \{(.*?)^\};" % name, src, re.S | re.M)
        if m is None:
            print("enum %s not found in %s" % (name, sys.argv[1]))
            return 2
        upstream.append("enum up_%s {%s};" % (
            name, re.sub(r"\b(VERBS_\w+)", r"up_\1", m.group(1))))
        for e in enumerators:
            checks.append('CHECK_VAL(%s);' % e)
    prog = "\n".join(upstream) + """
#include "verbs_provider_abi.h"
#include <stdio.h>
static int bad, n;
#define CHECK_SIZE(s) do { n++; if (sizeof(struct up_##s) != sizeof(struct s)) { \\
	bad++; printf("size of %s: upstream %zu, ours %zu\\n", #s, \\
	sizeof(struct up_##s), sizeof(struct s)); } } while (0)
#define CHECK_OFF(s, m) do { n++; if (offsetof(struct up_##s, m) != offsetof(struct s, m)) { \\
	bad++; printf("offset of %s.%s: upstream %zu, ours %zu\\n", #s, #m, \\
	offsetof(struct up_##s, m), offsetof(struct s, m)); } } while (0)
#define CHECK_VAL(e) do { n++; if ((long long)up_##e != (long long)e) { \\
	bad++; printf("value of %s: upstream %lld, ours %lld\\n", #e, \\
	(long long)up_##e, (long long)e); } } while (0)
int main(void)
{
""" + "\n".join("\t" + c for c in checks) + """
	printf("%d size/offset checks, %d mismatches\\n", n, bad);
	return bad != 0;
}
"""
    with tempfile.TemporaryDirectory() as tmp:
        c = os.path.join(tmp, "check.c")
        exe = os.path.join(tmp, "check")
        open(c, "w").write(prog)
        cc = os.environ.get("CC", "cc")
        r = subprocess.run([cc, "-std=gnu11", "-w", "-I", HERE, c, "-o", exe])
        if r.returncode != 0:
            # Most likely a member of upstream's that ours lacks.
            print("comparison program failed to compile (see above)")
            return 1
        return 1 if subprocess.run([exe]).returncode else 0


if __name__ == "__main__":
    sys.exit(main())
