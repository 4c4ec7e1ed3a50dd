# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""The side names of benchmarks/guest-perftest.sh that the reports share."""
import re

# Variants of a MetaRoCE side: BASE (mr1 or mr2), then "w" + N: both
# devices' requester window (sysfs window) at N, and/or "g" + M: both
# devices' loss gate on (sysfs cc_loss_gate, MR-CC-007) with a delay
# target of M ms (sysfs cc_delay_target_ns), and/or "h" + N: both devices
# hold a message's final ACK up to N us for a reply to carry it (sysfs
# ack_hold_ns, MR-LOSS-014), and/or "p" + N: both devices' QPs spread
# their packets over N paths (sysfs paths).  guest-perftest.sh parses the
# same pattern.
_VARIANT = re.compile(r"^(mr[12])(?:w([0-9]+))?(?:g([0-9]+))?(?:h([0-9]+))?(?:p([0-9]+))?$")


def side_variant(side):
    """(base side, label) of a variant of a MetaRoCE side, or None."""
    m = _VARIANT.match(side)
    if not m or not (m.group(2) or m.group(3) or m.group(4) or m.group(5)):
        return None
    label = []
    if m.group(2):
        label.append(f"window {int(m.group(2))}")
    if m.group(3):
        label.append(f"loss gate at {int(m.group(3))} ms")
    if m.group(4):
        label.append(f"ACK hold {int(m.group(4))} us")
    if m.group(5):
        label.append(f"{int(m.group(5))} paths")
    return m.group(1), ", ".join(label)
