-- SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
--
-- Wireshark dissector for MetaRoCE (docs/spec/wire.md, include/metaroce/wire.h).
--
-- MetaRoCE mode: UDP port 4793 (preference metaroce.udp_port).  Decodes the
-- common header, the data / immediate / atomic / acknowledgement extensions,
-- SACK ranges, and checks the CRC32C trailer (metaroce.crc.status).
-- RoCEv2-compatible mode: UDP 4791.  The IBTA headers are handed to
-- Wireshark's own InfiniBand dissector; this tree says so and adds the
-- QPN and PSN.  The trailer is the IBTA ICRC (the kernel computes it over
-- the IP and UDP headers too, MR-COMPAT-013), which the InfiniBand
-- dissector shows as infiniband.invariant.crc.
--
-- Load: tshark -X lua_script:metaroce.lua, or copy into
-- ~/.local/lib/wireshark/plugins/ (see metaroce-wireshark(7)).

local bit = bit32 or bit

local mr = Proto("metaroce", "MetaRoCE")

local MR_UDP_PORT = 4793
local ROCEV2_UDP_PORT = 4791
local HDR_LEN, DATA_EXT_LEN, ACK_EXT_LEN = 16, 24, 20
local IMM_EXT_LEN, ATOMIC_EXT_LEN, RANGE_LEN, CRC_LEN = 8, 16, 8, 4
local MAX_SACK_RANGES = 16

local OPC = {
	SEND = 0x01, WRITE = 0x02, SEND_IMM = 0x03, WRITE_IMM = 0x04,
	READ_REQ = 0x05, READ_RESP = 0x06, CMP_SWAP = 0x07, FETCH_ADD = 0x08,
	ATOMIC_RESP = 0x09, ACK = 0x10, PROBE = 0x20, PROBE_REPLY = 0x21,
}
local opcode_names = {
	[0x01] = "SEND", [0x02] = "WRITE", [0x03] = "SEND_IMM",
	[0x04] = "WRITE_IMM", [0x05] = "READ_REQ", [0x06] = "READ_RESP",
	[0x07] = "CMP_SWAP", [0x08] = "FETCH_ADD", [0x09] = "ATOMIC_RESP",
	[0x10] = "ACK", [0x20] = "PROBE", [0x21] = "PROBE_REPLY",
}
local syndrome_names = {
	[0] = "OK", [1] = "RNR", [2] = "remote access error",
	[3] = "invalid request", [4] = "remote operational error",
}
local crc_status_names = { [0] = "Bad", [1] = "Good" }

local F = {
	version = ProtoField.uint8("metaroce.version", "Version", base.DEC, nil, 0xf0),
	caps = ProtoField.uint8("metaroce.caps", "Capabilities", base.HEX, nil, 0x0f),
	caps_sack = ProtoField.bool("metaroce.caps.sack", "SACK", 8, nil, 0x01),
	caps_ack_trailer = ProtoField.bool("metaroce.caps.ack_trailer", "ACK trailer", 8, nil, 0x02),
	opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.HEX, opcode_names),
	flags = ProtoField.uint8("metaroce.flags", "Flags", base.HEX),
	flag_first = ProtoField.bool("metaroce.flags.first", "FIRST", 8, nil, 0x01),
	flag_last = ProtoField.bool("metaroce.flags.last", "LAST", 8, nil, 0x02),
	flag_retx = ProtoField.bool("metaroce.flags.retx", "RETX", 8, nil, 0x04),
	flag_ack_req = ProtoField.bool("metaroce.flags.ack_req", "ACK_REQ", 8, nil, 0x08),
	flag_ack = ProtoField.bool("metaroce.flags.ack", "ACK (carried)", 8, nil, 0x10),
	path = ProtoField.uint8("metaroce.path", "Path", base.DEC),
	qpn = ProtoField.uint32("metaroce.qpn", "Destination QPN", base.HEX),
	psn = ProtoField.uint32("metaroce.psn", "PSN", base.DEC),
	ts = ProtoField.uint32("metaroce.ts", "Timestamp (1024 ns)", base.DEC),
	-- data extension
	msg_id = ProtoField.uint32("metaroce.data.msg_id", "Message ID", base.DEC),
	offset = ProtoField.uint32("metaroce.data.offset", "Offset", base.DEC),
	resp_cum_psn = ProtoField.uint32("metaroce.data.resp_cum_psn",
		"Requester's cumulative PSN of the response stream", base.DEC),
	msg_len = ProtoField.uint32("metaroce.data.msg_len", "Message length", base.DEC),
	rkey = ProtoField.uint32("metaroce.data.rkey", "RKey", base.HEX),
	ssn = ProtoField.uint32("metaroce.data.ssn", "SSN", base.DEC),
	rkey_ssn = ProtoField.uint32("metaroce.data.rkey_ssn", "rkey_ssn", base.HEX),
	raddr = ProtoField.uint64("metaroce.data.raddr", "Remote address", base.HEX),
	payload_len = ProtoField.uint32("metaroce.payload_len", "Payload length", base.DEC),
	payload = ProtoField.bytes("metaroce.payload", "Payload"),
	-- immediate and atomic extensions
	imm = ProtoField.uint32("metaroce.imm", "Immediate data", base.HEX),
	imm_ssn = ProtoField.uint32("metaroce.imm.ssn", "SSN", base.DEC),
	swap = ProtoField.uint64("metaroce.atomic.swap", "Swap", base.HEX),
	add = ProtoField.uint64("metaroce.atomic.add", "Add", base.HEX),
	compare = ProtoField.uint64("metaroce.atomic.compare", "Compare", base.HEX),
	orig = ProtoField.uint64("metaroce.atomic.orig", "Original value", base.HEX),
	-- acknowledgement extension
	cum_psn = ProtoField.uint32("metaroce.ack.cum_psn", "Cumulative PSN", base.DEC),
	ts_echo = ProtoField.uint32("metaroce.ack.ts_echo", "Timestamp echo", base.DEC),
	ack_delay = ProtoField.uint32("metaroce.ack.ack_delay", "ACK delay (1024 ns)", base.DEC),
	nak_psn = ProtoField.uint32("metaroce.ack.nak_psn", "NAK PSN", base.DEC),
	echo_path = ProtoField.uint8("metaroce.ack.echo_path", "Echo path", base.DEC),
	syndrome = ProtoField.uint8("metaroce.ack.syndrome", "Syndrome", base.DEC, syndrome_names),
	nak = ProtoField.bool("metaroce.nak", "NAK"),
	nranges = ProtoField.uint8("metaroce.ack.nranges", "SACK ranges", base.DEC),
	ack_flags = ProtoField.uint8("metaroce.ack.flags", "ACK flags", base.HEX),
	ack_ece = ProtoField.bool("metaroce.ack.flags.ece", "ECE", 8, nil, 0x01),
	ack_dsack = ProtoField.bool("metaroce.ack.flags.dsack", "DSACK", 8, nil, 0x02),
	sack_range = ProtoField.string("metaroce.sack.range", "SACK range"),
	sack_start = ProtoField.uint32("metaroce.sack.start", "Start", base.DEC),
	sack_end = ProtoField.uint32("metaroce.sack.end", "End (exclusive)", base.DEC),
	sack_count = ProtoField.uint32("metaroce.sack.count", "PSNs", base.DEC),
	-- trailer and mode
	crc = ProtoField.uint32("metaroce.crc", "CRC32C", base.HEX),
	crc_status = ProtoField.uint8("metaroce.crc.status", "CRC32C status", base.DEC, crc_status_names),
	crc_computed = ProtoField.uint32("metaroce.crc.computed", "CRC32C computed", base.HEX),
	mode = ProtoField.string("metaroce.mode", "Mode"),
	malformed = ProtoField.string("metaroce.malformed", "Malformed"),
}
local field_list = {}
for _, f in pairs(F) do field_list[#field_list + 1] = f end
mr.fields = field_list

local E = {
	crc = ProtoExpert.new("metaroce.expert.crc", "CRC32C mismatch",
		expert.group.CHECKSUM, expert.severity.ERROR),
	short = ProtoExpert.new("metaroce.expert.short", "Packet shorter than its headers",
		expert.group.MALFORMED, expert.severity.ERROR),
	version = ProtoExpert.new("metaroce.expert.version", "Unknown version",
		expert.group.MALFORMED, expert.severity.ERROR),
	opcode = ProtoExpert.new("metaroce.expert.opcode", "Unknown opcode",
		expert.group.MALFORMED, expert.severity.ERROR),
	qpn = ProtoExpert.new("metaroce.expert.qpn", "QPN high byte not zero",
		expert.group.MALFORMED, expert.severity.ERROR),
	flags = ProtoExpert.new("metaroce.expert.flags", "FIRST/LAST disagree with offset and length",
		expert.group.MALFORMED, expert.severity.ERROR),
	nranges = ProtoExpert.new("metaroce.expert.nranges", "More SACK ranges than allowed",
		expert.group.MALFORMED, expert.severity.ERROR),
	length = ProtoExpert.new("metaroce.expert.length", "Length disagrees with the headers",
		expert.group.MALFORMED, expert.severity.ERROR),
	nak = ProtoExpert.new("metaroce.expert.nak", "NAK",
		expert.group.RESPONSE_CODE, expert.severity.NOTE),
	retx = ProtoExpert.new("metaroce.expert.retx", "Retransmission",
		expert.group.SEQUENCE, expert.severity.NOTE),
	rocev2 = ProtoExpert.new("metaroce.expert.rocev2",
		"RoCEv2-compatible mode: IBTA headers decoded by the InfiniBand dissector",
		expert.group.PROTOCOL, expert.severity.CHAT),
}
mr.experts = { E.crc, E.short, E.version, E.opcode, E.qpn, E.flags,
	E.nranges, E.length, E.nak, E.retx, E.rocev2 }

mr.prefs.udp_port = Pref.uint("UDP port", MR_UDP_PORT,
	"Destination UDP port of MetaRoCE mode (MR_UDP_PORT)")

-- CRC32C (Castagnoli, reflected polynomial 0x82F63B78), MR-WIRE-006.
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if bit.band(c, 1) ~= 0 then
			c = bit.bxor(bit.rshift(c, 1), 0x82F63B78)
		else
			c = bit.rshift(c, 1)
		end
	end
	crc_table[i] = c
end

local function crc32c(s)
	local c = 0xffffffff
	for i = 1, #s do
		c = bit.bxor(crc_table[bit.band(bit.bxor(c, s:byte(i)), 0xff)],
			bit.rshift(c, 8))
	end
	return bit.bxor(c, 0xffffffff)
end

-- Problems found in the packet being dissected, for the Info column.
local problems = {}

-- Records a problem: expert info on item and the metaroce.malformed field.
local function problem(tree, item, kind, text)
	item:add_proto_expert_info(E[kind], text)
	tree:add(F.malformed, kind):set_generated()
	problems[#problems + 1] = kind
end

-- CRC32C trailer over every preceding byte.  Returns false when bad.
local function add_crc(tvb, tree)
	local len = tvb:len()
	local want = tvb(len - CRC_LEN, CRC_LEN):uint()
	local got = crc32c(tvb(0, len - CRC_LEN):raw())
	local item = tree:add(F.crc, tvb(len - CRC_LEN, CRC_LEN))
	tree:add(F.crc_computed, got):set_generated()
	tree:add(F.crc_status, got == want and 1 or 0):set_generated()
	if got ~= want then
		problem(tree, item, "crc", string.format(
			"CRC32C 0x%08x, computed 0x%08x", want, got))
		return false
	end
	return true
end

local function add_data_ext(tvb, tree, opc)
	local t = tree:add(mr, tvb(HDR_LEN, DATA_EXT_LEN), "Data extension")
	t:add(F.msg_id, tvb(16, 4))
	if opc == OPC.READ_REQ or opc == OPC.CMP_SWAP or opc == OPC.FETCH_ADD then
		t:add(F.resp_cum_psn, tvb(20, 4))
	else
		t:add(F.offset, tvb(20, 4))
	end
	t:add(F.msg_len, tvb(24, 4))
	if opc == OPC.SEND or opc == OPC.SEND_IMM then
		t:add(F.ssn, tvb(28, 4))
	elseif opc == OPC.READ_RESP or opc == OPC.ATOMIC_RESP then
		t:add(F.rkey_ssn, tvb(28, 4))
	else
		t:add(F.rkey, tvb(28, 4))
	end
	t:add(F.raddr, tvb(32, 8))
end

-- Header bytes after the data extension, payload expected (-1: any).
local data_layout = {
	[OPC.SEND] = { 0, -1 }, [OPC.WRITE] = { 0, -1 },
	[OPC.SEND_IMM] = { IMM_EXT_LEN, -1 }, [OPC.WRITE_IMM] = { IMM_EXT_LEN, -1 },
	[OPC.READ_REQ] = { 0, 0 }, [OPC.READ_RESP] = { 0, -1 },
	[OPC.CMP_SWAP] = { ATOMIC_EXT_LEN, 0 }, [OPC.FETCH_ADD] = { ATOMIC_EXT_LEN, 0 },
	[OPC.ATOMIC_RESP] = { 0, 8 },
}

-- The acknowledgement extension (MR-WIRE-005) at offset o: its subtree
-- and the item of its nranges.
local function add_ack_ext(tvb, tree, o, title)
	local t = tree:add(mr, tvb(o, ACK_EXT_LEN), title)
	t:add(F.cum_psn, tvb(o, 4))
	t:add(F.ts_echo, tvb(o + 4, 4))
	t:add(F.ack_delay, tvb(o + 8, 4))
	t:add(F.nak_psn, tvb(o + 12, 4))
	t:add(F.echo_path, tvb(o + 16, 1))
	local syn = tvb(o + 17, 1):uint()
	local syn_item = t:add(F.syndrome, tvb(o + 17, 1))
	t:add(F.nak, syn ~= 0):set_generated()
	if syn ~= 0 then
		syn_item:add_proto_expert_info(E.nak, string.format("NAK %s for PSN %d",
			syndrome_names[syn] or tostring(syn), tvb(o + 12, 4):uint()))
	end
	local nr_item = t:add(F.nranges, tvb(o + 18, 1))
	local af = t:add(F.ack_flags, tvb(o + 19, 1))
	af:add(F.ack_ece, tvb(o + 19, 1))
	af:add(F.ack_dsack, tvb(o + 19, 1))
	return t, nr_item
end

local function dissect_data(tvb, tree, opc, flags, top)
	-- MR-WIRE-010: a carried ACK sits between the payload and the CRC.
	local carried = bit.band(flags, 0x10) ~= 0
	local len = tvb:len() - (carried and ACK_EXT_LEN or 0)
	local layout = data_layout[opc]
	local ext = HDR_LEN + DATA_EXT_LEN + layout[1]
	if len < ext + CRC_LEN then
		problem(tree, top, "short", string.format(
			"%d bytes, %s needs %d", tvb:len(), opcode_names[opc],
			ext + CRC_LEN + tvb:len() - len))
		return
	end
	if carried then
		local o = len - CRC_LEN
		local _, nr_item = add_ack_ext(tvb, tree, o, "Carried acknowledgement")
		if tvb(o + 17, 1):uint() ~= 0 or tvb(o + 18, 1):uint() ~= 0 then
			problem(tree, nr_item, "nranges",
				"a carried ACK has syndrome 0 and no SACK ranges")
		end
	end
	add_data_ext(tvb, tree, opc)
	if opc == OPC.SEND_IMM or opc == OPC.WRITE_IMM then
		local t = tree:add(mr, tvb(40, IMM_EXT_LEN), "Immediate extension")
		t:add(F.imm, tvb(40, 4))
		t:add(F.imm_ssn, tvb(44, 4))
	elseif opc == OPC.CMP_SWAP or opc == OPC.FETCH_ADD then
		local t = tree:add(mr, tvb(40, ATOMIC_EXT_LEN), "Atomic extension")
		t:add(opc == OPC.CMP_SWAP and F.swap or F.add, tvb(40, 8))
		t:add(F.compare, tvb(48, 8))
	end
	local paylen = len - ext - CRC_LEN
	local pl = tree:add(F.payload_len, paylen):set_generated()
	if layout[2] >= 0 and paylen ~= layout[2] then
		problem(tree, pl, "length", string.format(
			"%s carries %d payload bytes, not %d", opcode_names[opc],
			paylen, layout[2]))
	end
	if paylen > 0 then
		if opc == OPC.ATOMIC_RESP and paylen == 8 then
			tree:add(F.orig, tvb(ext, 8))
		else
			tree:add(F.payload, tvb(ext, paylen))
		end
	end
	-- MR-WIRE-004: FIRST iff offset 0, LAST iff the payload ends the message;
	-- requests without payload set both (MR-WIRE-009).
	local first = bit.band(flags, 0x01) ~= 0
	local last = bit.band(flags, 0x02) ~= 0
	if layout[2] == 0 then
		if not (first and last) then
			problem(tree, top, "flags", "a request must set FIRST and LAST")
		end
		return
	end
	local offset, msg_len = tvb(20, 4):uint(), tvb(24, 4):uint()
	if offset + paylen > msg_len then
		problem(tree, pl, "length", string.format(
			"offset %d + payload %d exceeds message length %d",
			offset, paylen, msg_len))
	end
	if first ~= (offset == 0) or last ~= (offset + paylen == msg_len) then
		problem(tree, top, "flags", string.format(
			"FIRST=%s LAST=%s, offset %d, payload %d, message %d",
			tostring(first), tostring(last), offset, paylen, msg_len))
	end
end

local function dissect_ack(tvb, tree, opc, top)
	local len = tvb:len()
	if len < HDR_LEN + ACK_EXT_LEN + CRC_LEN then
		problem(tree, top, "short", string.format(
			"%d bytes, %s needs %d", len, opcode_names[opc],
			HDR_LEN + ACK_EXT_LEN + CRC_LEN))
		return ""
	end
	local t, nr_item = add_ack_ext(tvb, tree, HDR_LEN, "Acknowledgement extension")
	local nranges = tvb(34, 1):uint()
	local summary = string.format(" cum=%d", tvb(16, 4):uint())
	if opc == OPC.PROBE_REPLY then
		nranges = 0	-- ranges follow ACKs only (MR-WIRE-005)
	end
	if nranges > MAX_SACK_RANGES then
		problem(tree, nr_item, "nranges", string.format(
			"%d SACK ranges, at most %d", nranges, MAX_SACK_RANGES))
	end
	local want = HDR_LEN + ACK_EXT_LEN + nranges * RANGE_LEN + CRC_LEN
	if len ~= want then
		problem(tree, top, "length", string.format(
			"%d bytes, %d SACK ranges imply %d", len, nranges, want))
	end
	local off = HDR_LEN + ACK_EXT_LEN
	local i = 0
	while i < nranges and off + RANGE_LEN <= len - CRC_LEN do
		local s, e = tvb(off, 4):uint(), tvb(off + 4, 4):uint()
		local r = tree:add(F.sack_range, tvb(off, RANGE_LEN),
			string.format("%d-%d", s, e))
		r:add(F.sack_start, tvb(off, 4))
		r:add(F.sack_end, tvb(off + 4, 4))
		r:add(F.sack_count, bit.band(e - s, 0xffffff)):set_generated()
		summary = summary .. string.format(" [%d,%d)", s, e)
		off = off + RANGE_LEN
		i = i + 1
	end
	return summary
end

local function dissect_metaroce(tvb, pinfo, root)
	local len = tvb:len()
	pinfo.cols.protocol = "MetaRoCE"
	local tree = root:add(mr, tvb(), "MetaRoCE")
	tree:add(F.mode, "metaroce"):set_generated()
	if len < HDR_LEN + CRC_LEN then
		problem(tree, tree, "short", string.format(
			"%d bytes, the common header and CRC need %d", len, HDR_LEN + CRC_LEN))
		pinfo.cols.info = "MetaRoCE [Malformed: short]"
		return
	end
	add_crc(tvb, tree)
	local ver = bit.rshift(tvb(0, 1):uint(), 4)
	local opc = tvb(1, 1):uint()
	local flags = tvb(2, 1):uint()
	local h = tree:add(mr, tvb(0, HDR_LEN), "Common header")
	local vi = h:add(F.version, tvb(0, 1))
	local ci = h:add(F.caps, tvb(0, 1))
	ci:add(F.caps_sack, tvb(0, 1))
	ci:add(F.caps_ack_trailer, tvb(0, 1))
	local oi = h:add(F.opcode, tvb(1, 1))
	local fi = h:add(F.flags, tvb(2, 1))
	fi:add(F.flag_first, tvb(2, 1))
	fi:add(F.flag_last, tvb(2, 1))
	fi:add(F.flag_retx, tvb(2, 1))
	fi:add(F.flag_ack_req, tvb(2, 1))
	fi:add(F.flag_ack, tvb(2, 1))
	h:add(F.path, tvb(3, 1))
	local qi = h:add(F.qpn, tvb(4, 4))
	h:add(F.psn, tvb(8, 4))
	h:add(F.ts, tvb(12, 4))
	if bit.band(flags, 0x04) ~= 0 then
		fi:add_proto_expert_info(E.retx)
	end
	if tvb(4, 1):uint() ~= 0 then
		problem(tree, qi, "qpn", "dst_qpn is 24 bits")
	end
	local name = opcode_names[opc]
	local info = string.format("%s QP=0x%06x PSN=%d path=%d",
		name or string.format("opcode 0x%02x", opc),
		bit.band(tvb(4, 4):uint(), 0xffffff), tvb(8, 4):uint(), tvb(3, 1):uint())
	if ver ~= 1 then
		problem(tree, vi, "version", string.format("version %d, not 1", ver))
	elseif not name then
		problem(tree, oi, "opcode", string.format("opcode 0x%02x", opc))
	elseif data_layout[opc] then
		dissect_data(tvb, tree, opc, flags, tree)
	elseif opc == OPC.ACK or opc == OPC.PROBE_REPLY then
		info = info .. dissect_ack(tvb, tree, opc, tree)
	elseif len ~= HDR_LEN + ACK_EXT_LEN + CRC_LEN then	-- PROBE
		problem(tree, tree, "length", string.format(
			"PROBE of %d bytes, not %d", len, HDR_LEN + ACK_EXT_LEN + CRC_LEN))
	else
		dissect_ack(tvb, tree, opc, tree)
	end
	if bit.band(flags, 0x04) ~= 0 then info = info .. " RETX" end
	if #problems > 0 then
		info = info .. " [Malformed: " .. table.concat(problems, ", ") .. "]"
	end
	pinfo.cols.info = info
	tree:append_text(", " .. info)
end

-- RoCEv2-compatible mode: BTH first.  Wireshark's InfiniBand dissector owns
-- the IBTA headers; this adds what MetaRoCE defines about them.
local ib_handle = DissectorTable.get("udp.port"):get_dissector(ROCEV2_UDP_PORT)

local function dissect_rocev2(tvb, pinfo, root)
	local len = tvb:len()
	local tree = root:add(mr, tvb(), "MetaRoCE, RoCEv2-compatible mode")
	tree:add(F.mode, "rocev2"):set_generated()
	tree:add_proto_expert_info(E.rocev2)
	if len < 12 + CRC_LEN then
		problem(tree, tree, "short", string.format(
			"%d bytes, BTH and trailer need %d", len, 12 + CRC_LEN))
	else
		tree:add(F.qpn, tvb(5, 3)):set_generated()
		tree:add(F.psn, tvb(9, 3)):set_generated()
		-- The trailer is the IBTA ICRC (MR-COMPAT-013), which covers the
		-- IP and UDP headers: the InfiniBand dissector shows it
		-- (infiniband.invariant.crc); no CRC32C to check here.
	end
	if ib_handle then
		tree:append_text(": IBTA headers decoded by the InfiniBand dissector below")
		ib_handle:call(tvb, pinfo, root)
	else
		tree:append_text(": no InfiniBand dissector in this Wireshark")
	end
end

function mr.dissector(tvb, pinfo, root)
	problems = {}
	-- Every datagram of either mode goes to the mode's port; the source
	-- port is path entropy.
	if pinfo.dst_port == ROCEV2_UDP_PORT or
	   (pinfo.src_port == ROCEV2_UDP_PORT and pinfo.dst_port ~= registered_port) then
		dissect_rocev2(tvb, pinfo, root)
	else
		dissect_metaroce(tvb, pinfo, root)
	end
	return tvb:len()
end

local udp_table = DissectorTable.get("udp.port")
local registered_port = mr.prefs.udp_port
udp_table:add(registered_port, mr)
udp_table:add(ROCEV2_UDP_PORT, mr)

function mr.prefs_changed()
	if mr.prefs.udp_port ~= registered_port then
		udp_table:remove(registered_port, mr)
		registered_port = mr.prefs.udp_port
		udp_table:add(registered_port, mr)
	end
end
