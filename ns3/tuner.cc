// tuner.cc: libreact through its C ABI only (capi/react.h).
#define MSGPACK_NO_BOOST
#include "tuner.h"

#include <cstring>
#include <msgpack.hpp>

#include "react.h"

namespace reactns3 {

namespace {

[[noreturn]] void fail(const std::string& what, int st) {
    char msg[REACT_ERROR_MAX];
    react_last_error(msg, sizeof msg);
    throw Error(what + " (status " + std::to_string(st) + "): " + msg);
}

const msgpack::object* field(const msgpack::object& m, const char* key) {
    if (m.type != msgpack::type::MAP) throw Error("pattern: not a msgpack map");
    for (uint32_t i = 0; i < m.via.map.size; i++) {
        const auto& kv = m.via.map.ptr[i];
        if (kv.key.type == msgpack::type::STR && kv.key.via.str.size == std::strlen(key) &&
            std::memcmp(kv.key.via.str.ptr, key, kv.key.via.str.size) == 0)
            return &kv.val;
    }
    return nullptr;
}

const msgpack::object& need(const msgpack::object& m, const char* key) {
    const msgpack::object* v = field(m, key);
    if (!v) throw Error(std::string("pattern: no key \"") + key + "\"");
    return *v;
}

// column returns the bytes of a {"dtype", "shape", "data"} column after
// checking its dtype and that it holds n items of size sz.
const char* column(const msgpack::object& flows, const char* name, const char* dtype, size_t n, size_t sz) {
    const msgpack::object& c = need(flows, name);
    if (need(c, "dtype").as<std::string>() != dtype)
        throw Error(std::string("pattern: column ") + name + " is not " + dtype);
    const msgpack::object& d = need(c, "data");
    if (d.type != msgpack::type::BIN || d.via.bin.size != n * sz)
        throw Error(std::string("pattern: column ") + name + " has the wrong size");
    return d.via.bin.ptr;
}

template <class T>
T at(const char* p, size_t i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));  // little-endian on every target we build for
    return v;
}

}  // namespace

void checkABI() {
    if (react_abi_version() != REACT_ABI_VERSION)
        throw Error("libreact ABI " + std::to_string(react_abi_version()) + ", the harness was built for " +
                    std::to_string(REACT_ABI_VERSION));
}

Pattern decodePattern(const std::vector<uint8_t>& bytes) {
    size_t need_len = 0;
    int st = react_pattern_layout(bytes.data(), bytes.size(), nullptr, 0, &need_len);
    if (st != REACT_E_SHORT) fail("pattern check", st);  // E_SHORT: it passed and sized the layout
    msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const msgpack::object& m = oh.get();
    Pattern p;
    p.bytes = bytes;
    p.op = need(m, "op").as<std::string>();
    p.algo = need(m, "algo").as<std::string>();
    p.ranks = need(m, "ranks").as<int>();
    p.root = need(m, "root").as<int>();
    size_t n = need(m, "nflows").as<size_t>();
    const msgpack::object& fl = need(m, "flows");
    const char* chunk = column(fl, "chunk", "<i4", n, 4);
    const char* step = column(fl, "step", "<i4", n, 4);
    const char* src = column(fl, "src", "<i4", n, 4);
    const char* dst = column(fl, "dst", "<i4", n, 4);
    const char* kind = column(fl, "kind", "|u1", n, 1);
    const char* frac = column(fl, "fraction", "<f8", n, 8);
    p.flows.resize(n);
    for (size_t i = 0; i < n; i++)
        p.flows[i] = Flow{at<int32_t>(chunk, i), at<int32_t>(step, i), at<int32_t>(src, i), at<int32_t>(dst, i),
                          at<uint8_t>(kind, i), at<double>(frac, i)};
    return p;
}

Pattern generatePattern(const std::string& op, const std::string& algo, int ranks, int root) {
    size_t len = 0;
    int st = react_pattern_generate(op.c_str(), algo.c_str(), ranks, root, nullptr, 0, &len);
    if (st != REACT_E_SHORT) fail("generate " + op + "/" + algo, st);
    std::vector<uint8_t> buf(len);
    st = react_pattern_generate(op.c_str(), algo.c_str(), ranks, root, buf.data(), buf.size(), &len);
    if (st != REACT_OK) fail("generate " + op + "/" + algo, st);
    buf.resize(len);
    return decodePattern(buf);
}

Tuner::Tuner(const Pattern& initial, double messageBytes, const std::string& configJSON) {
    int st = react_tuner_create(initial.bytes.data(), initial.bytes.size(), messageBytes,
                                configJSON.empty() ? nullptr : configJSON.c_str(), &h_);
    if (st != REACT_OK) fail("tuner create", st);
}

Tuner::~Tuner() { react_tuner_close(h_); }

void Tuner::submit(int64_t epoch, int64_t version, const std::vector<double>& fct, double elapsed) {
    msgpack::sbuffer sb;
    msgpack::packer<msgpack::sbuffer> pk(sb);
    auto col = [&](const std::vector<size_t>& shape, const double* data, size_t n) {
        pk.pack_map(3);
        pk.pack("dtype");
        pk.pack("<f8");
        pk.pack("shape");
        pk.pack_array(shape.size());
        for (size_t s : shape) pk.pack(uint64_t(s));
        pk.pack("data");
        pk.pack_bin(uint32_t(n * 8));
        pk.pack_bin_body(reinterpret_cast<const char*>(data), uint32_t(n * 8));
    };
    pk.pack_map(7);
    pk.pack("format");
    pk.pack("react.fcts/v1");
    pk.pack("epoch0");
    pk.pack(epoch);
    pk.pack("version");
    pk.pack(version);
    pk.pack("epochs");
    pk.pack(1);
    pk.pack("nflows");
    pk.pack(uint64_t(fct.size()));
    pk.pack("fct");
    col({1, fct.size()}, fct.data(), fct.size());
    pk.pack("elapsed");
    col({1}, &elapsed, 1);
    int st = react_tuner_submit(h_, reinterpret_cast<const uint8_t*>(sb.data()), sb.size());
    if (st != REACT_OK) fail("tuner submit, epoch " + std::to_string(epoch), st);
}

bool Tuner::decision(Decision& d) {
    size_t len = 0;
    int st = react_tuner_decision(h_, &d.version, &d.effective, nullptr, 0, &len);
    if (st == REACT_NONE) return false;
    if (st != REACT_E_SHORT) fail("tuner decision", st);
    std::vector<uint8_t> buf(len);
    st = react_tuner_decision(h_, &d.version, &d.effective, buf.data(), buf.size(), &len);
    if (st != REACT_OK) fail("tuner decision", st);
    buf.resize(len);
    d.pattern = decodePattern(buf);  // checked again before it runs, as every rank does
    return true;
}

}  // namespace reactns3
