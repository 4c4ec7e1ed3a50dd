// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// The helper protocol of README.md: formats, parsing, and the command
// parser of a DUT-side helper (dut_helper.hpp).
#include "dut_helper.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace mrcomp {
namespace {

// A number as the protocol writes them: decimal or 0x hexadecimal.
bool number(const std::string &s, uint64_t *v)
{
	if (s.empty() || s[0] == '-' || s[0] == '+')
		return false;
	char *end = nullptr;
	errno = 0;
	unsigned long long x = strtoull(s.c_str(), &end, 0);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

// "k=v k=v ..." -> map; false if a token has no '='.
bool keys(const std::string &s, std::map<std::string, std::string> *kv)
{
	std::istringstream in(s);
	std::string tok;
	while (in >> tok) {
		auto eq = tok.find('=');
		if (eq == std::string::npos || eq == 0)
			return false;
		(*kv)[tok.substr(0, eq)] = tok.substr(eq + 1);
	}
	return true;
}

// A numeric key: absent leaves *v alone; present must parse.
bool num_key(const std::map<std::string, std::string> &kv, const char *k,
	     uint64_t *v)
{
	auto it = kv.find(k);
	return it == kv.end() || number(it->second, v);
}

std::vector<std::string> words(const std::string &line)
{
	std::istringstream in(line);
	std::vector<std::string> w;
	std::string t;
	while (in >> t)
		w.push_back(t);
	return w;
}

// Words 1..n of w as numbers.
bool numbers(const std::vector<std::string> &w, size_t n, uint64_t *v)
{
	if (w.size() != n + 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!number(w[i + 1], &v[i]))
			return false;
	return true;
}

}  // namespace

std::string format_open(const HelperOpen &o)
{
	std::ostringstream s;
	s << "open mode=" << (o.mode == Mode::rocev2 ? "rocev2" : "metaroce")
	  << " paths=" << o.paths << " peer_qpn=" << o.peer_qpn
	  << " peer_psn=" << o.peer_psn << " peer_addr=" << o.peer_addr;
	if (o.rtt_ns)
		s << " rtt_ns=" << o.rtt_ns;
	return s.str();
}

bool parse_open(const std::string &args, HelperOpen *o, std::string *err)
{
	std::map<std::string, std::string> kv;
	uint64_t paths = 1, qpn = 0, psn = 0;
	*o = HelperOpen{};
	if (!keys(args, &kv) || !num_key(kv, "paths", &paths) ||
	    !num_key(kv, "peer_qpn", &qpn) || !num_key(kv, "peer_psn", &psn) ||
	    !num_key(kv, "rtt_ns", &o->rtt_ns)) {
		*err = "bad open arguments";
		return false;
	}
	if (kv["mode"] == "rocev2")
		o->mode = Mode::rocev2;
	else if (kv["mode"] != "metaroce") {
		*err = "mode must be metaroce or rocev2";
		return false;
	}
	if (!paths || qpn > 0xffffff || psn > 0xffffff ||
	    !kv.count("peer_qpn") || !kv.count("peer_psn") ||
	    kv["peer_addr"].empty()) {
		*err = "open needs paths, peer_qpn, peer_psn and peer_addr";
		return false;
	}
	o->paths = static_cast<unsigned>(paths);
	o->peer_qpn = static_cast<uint32_t>(qpn);
	o->peer_psn = static_cast<uint32_t>(psn);
	o->peer_addr = kv["peer_addr"];
	return true;
}

std::string format_qp(const HelperQp &q)
{
	const DutInfo &i = q.info;
	std::ostringstream s;
	s << "qpn=" << i.qpn << " psn=" << i.psn << " rkey=" << i.rkey
	  << " addr=" << i.addr << " mr_len=" << i.mr_len << " mtu=" << i.mtu
	  << " paths=" << i.num_paths << " window=" << i.window
	  << " retry_cnt=" << i.retry_cnt;
	if (q.sport_base)
		s << " sport_base=" << q.sport_base;
	if (i.answer_ns)
		s << " answer_ns=" << i.answer_ns;
	if (i.timer_ns)
		s << " timer_ns=" << i.timer_ns;
	if (q.icrc)
		s << " icrc=1";
	return s.str();
}

bool parse_qp(const std::string &args, HelperQp *q)
{
	std::map<std::string, std::string> kv;
	uint64_t v[13] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
	static const char *const names[13] = {
		"qpn", "psn", "rkey", "addr", "mr_len", "mtu", "paths",
		"window", "retry_cnt", "sport_base", "answer_ns", "timer_ns",
		"icrc"};
	if (!keys(args, &kv) || !kv.count("qpn") || !kv.count("mtu"))
		return false;
	for (unsigned i = 0; i < 13; i++)
		if (!num_key(kv, names[i], &v[i]))
			return false;
	*q = HelperQp{};
	DutInfo &i = q->info;
	i.qpn = static_cast<uint32_t>(v[0]);
	i.psn = static_cast<uint32_t>(v[1]);
	i.rkey = static_cast<uint32_t>(v[2]);
	i.addr = v[3];
	i.mr_len = static_cast<uint32_t>(v[4]);
	i.mtu = static_cast<uint32_t>(v[5]);
	i.num_paths = static_cast<unsigned>(v[6]);
	i.window = static_cast<uint32_t>(v[7]);
	i.retry_cnt = static_cast<uint32_t>(v[8]);
	q->sport_base = static_cast<uint32_t>(v[9]);
	i.answer_ns = v[10];
	i.timer_ns = v[11];
	q->icrc = v[12] != 0;
	return i.mtu && i.num_paths;
}

std::string format_wc(const Completion &c)
{
	std::ostringstream s;
	s << "wc " << c.wr_id << " " << unsigned(c.status) << " "
	  << unsigned(c.opcode) << " " << c.byte_len;
	return s.str();
}

bool parse_wc(const std::string &line, Completion *c)
{
	auto w = words(line);
	uint64_t v[4];
	if (w.empty() || w[0] != "wc" || !numbers(w, 4, v))
		return false;
	c->wr_id = v[0];
	c->status = static_cast<uint8_t>(v[1]);
	c->opcode = static_cast<uint8_t>(v[2]);
	c->byte_len = static_cast<uint32_t>(v[3]);
	return true;
}

std::string HelperServer::command(const std::string &line)
{
	auto w = words(line);
	auto reply = [](const std::string &err, const std::string &ok = "ok") {
		return (err.empty() ? ok : "err " + err) + "\n";
	};
	// off + len within the MR
	auto in_mr = [&](uint64_t off, uint64_t len) {
		return off <= mr_len_ && len <= mr_len_ - off;
	};
	uint64_t v[6];
	if (w.empty())
		return reply("bad command");
	const std::string &cmd = w[0];
	if (cmd == "open") {
		HelperOpen o;
		std::string err;
		b_.close();
		open_ = false;
		if (!parse_open(line.substr(line.find("open") + 4), &o, &err))
			return reply(err);
		HelperQp q;
		err = b_.open(o, &q);
		if (!err.empty())
			return reply(err);
		open_ = true;
		mr_len_ = q.info.mr_len;
		return reply("", "ok " + format_qp(q));
	}
	if (cmd == "close") {
		b_.close();
		open_ = false;
		return reply("");
	}
	if (!open_)
		return reply("no QP");
	if (cmd == "destroy" && w.size() == 1) {
		// The QP is gone even if the implementation complained.
		open_ = false;
		return reply(b_.destroy_qp());
	}
	if (cmd == "recv" && numbers(w, 3, v) && in_mr(v[1], v[2]))
		return reply(b_.post_recv(v[0], v[1], v[2]));
	if (cmd == "send" && numbers(w, 6, v) && v[1] <= 1 && in_mr(v[2], v[3]) &&
	    v[4] <= UINT32_MAX)
		return reply(b_.post_send(v[0], v[1], v[2], v[3], v[4], v[5]));
	if (cmd == "poll" && w.size() == 1) {
		std::string out;
		for (const auto &c : b_.poll())
			out += format_wc(c) + "\n";
		return out + reply("");
	}
	if (cmd == "mem" && numbers(w, 2, v) && in_mr(v[0], v[1])) {
		auto m = b_.read_mem(v[0], v[1]);
		if (!m)
			return reply("cannot read the MR");
		static const char hex[] = "0123456789abcdef";
		std::string h = "ok ";
		for (uint8_t x : *m) {
			h += hex[x >> 4];
			h += hex[x & 15];
		}
		return h + "\n";
	}
	if (cmd == "counter" && w.size() == 2) {
		auto c = b_.counter(w[1]);
		return c ? "ok " + std::to_string(*c) + "\n" : reply("no such counter");
	}
	return reply("bad command");
}

void HelperServer::run(FILE *in, FILE *out)
{
	char buf[4096];
	while (fgets(buf, sizeof(buf), in)) {
		fputs(command(buf).c_str(), out);
		fflush(out);
	}
}

}  // namespace mrcomp
