# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""The side names of benchmarks/guest-perftest.sh that the reports share."""
import re

# BASE + "w" + N: side BASE (mr1 or mr2) with both devices' requester
# window (sysfs window) at N; guest-perftest.sh parses the same pattern.
_WINDOW_VARIANT = re.compile(r"^(mr[12])w([0-9]+)$")


def window_variant(side):
    """(base side, window) of a window variant, or None."""
    m = _WINDOW_VARIANT.match(side)
    return (m.group(1), int(m.group(2))) if m else None
