// react-ns3: runs one case of a react scenario at packet level in ns-3.37
// (DCTCP, RED/ECN, prioritised ACKs), with REACT in the loop through
// libreact's C ABI.
//
//   react-ns3 INPUT.json OUTPUT.json
//
// INPUT is the flat, resolved case `react sim --engine ns3` writes (format
// "react.ns3-input/v1", docs/simulation.md): the network, the pinned ECMP
// paths, each job's hosts and per-connection path choices, the external
// flows. OUTPUT ("react.ns3-output/v1") holds every epoch's collective time
// and every flow's start and completion, the tuner's decisions and the
// packets dropped. REACT_NS3_DEBUG=1 prints each epoch and, at the end,
// every connection still waiting for bytes, on stderr. REACT_NS3_LOG=PATH
// writes libreact's log there at INFO: each tuner decision with its note.
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_map>

#include "net.h"
#include "react.h"
#include "tuner.h"

using namespace ns3;
using json = nlohmann::json;

namespace reactns3 {

// Packets dropped by a queue (full buffer, or RED on a packet that is not
// ECN-capable) and by IP (no route): reported, since the fluid model
// drops nothing.
uint64_t g_qdrops = 0, g_ipdrops = 0;
void qdrop(std::string, Ptr<const QueueDiscItem>) { g_qdrops++; }
void ipdrop(std::string, const Ipv4Header&, Ptr<const Packet>, Ipv4L3Protocol::DropReason, Ptr<Ipv4>, uint32_t) {
    g_ipdrops++;
}

struct JobSpec {
    std::string name, op, algo, tunerConfig;
    int ranks = 0, root = -1, ports = 1, chunks = 1;
    double bytes = 0, gap = 0;
    bool tune = false;
    std::vector<int> hosts;
    std::vector<Flow> flows;   // empty: generate op/algo through libreact
    std::vector<int> routes;   // [chunk][src][dst][port] -> path id, -1 within a host
};

struct Job;

// Conn is one TCP connection on one pinned path. Flows queue on it in the
// order they start; the receiver counts bytes off the same queue, so a
// flow completes when its last byte arrived.
struct Conn {
    struct Pending {
        Job* job;
        int flow;
        uint64_t left;
    };
    Ptr<Socket> tx;
    bool connected = false, infinite = false;
    uint64_t unsent = 0;
    std::deque<Pending> rx;

    void pump() {
        if (!connected) return;
        while (infinite || unsent > 0) {
            uint32_t room = tx->GetTxAvailable();
            if (room == 0) return;
            uint32_t n = infinite ? room : static_cast<uint32_t>(std::min<uint64_t>(room, unsent));
            int sent = tx->Send(Create<Packet>(n));
            if (sent <= 0) return;
            if (!infinite) unsent -= sent;
        }
    }
    void deliver(uint64_t n);
};

// Harness owns the connections of the run and the listener of every host.
class Harness {
  public:
    explicit Harness(Net& net) : net_(net) {}
    void listen(int hosts) {
        for (int h = 0; h < hosts; h++) {
            Ptr<Socket> s = Socket::CreateSocket(net_.node(h), TcpSocketFactory::GetTypeId());
            s->Bind(InetSocketAddress(Ipv4Address::GetAny(), kPort));
            s->Listen();
            s->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                 MakeCallback(&Harness::accepted, this));
            listeners_.push_back(s);
        }
    }
    Conn* open(int path) {
        auto c = std::make_unique<Conn>();
        int src = net_.pathSrc(path);
        c->tx = Socket::CreateSocket(net_.node(src), TcpSocketFactory::GetTypeId());
        c->tx->Bind();
        Address local;
        c->tx->GetSockName(local);
        uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
        Conn* raw = c.get();
        byKey_[key(net_.primary(src), port)] = raw;
        c->tx->SetConnectCallback(MakeBoundCallback(&Harness::connected, raw),
                                  MakeBoundCallback(&Harness::refused, path));
        c->tx->SetSendCallback(MakeBoundCallback(&Harness::room, raw));
        // Connect from within the simulation: before Run the queue discs
        // are not set up yet.
        Ptr<Socket> tx = c->tx;
        InetSocketAddress to(net_.pathAddr(path), kPort);
        Simulator::ScheduleNow([tx, to] { tx->Connect(to); });
        conns_.push_back(std::move(c));
        return raw;
    }

    // dump says, on stderr, where every unfinished flow stands.
    void dump() const {
        for (const auto& c : conns_)
            if (!c->rx.empty())
                std::cerr << "conn connected=" << c->connected << " unsent=" << c->unsent << " left=" << c->rx.front().left
                          << " queued=" << c->rx.size() << " txavail=" << c->tx->GetTxAvailable() << "\n";
    }

  private:
    static constexpr uint16_t kPort = 9000;
    static uint64_t key(Ipv4Address a, uint16_t port) { return uint64_t(a.Get()) << 16 | port; }
    static void connected(Conn* c, Ptr<Socket>) {
        c->connected = true;
        c->pump();
    }
    static void refused(int path, Ptr<Socket>) {
        throw std::runtime_error("connection on path " + std::to_string(path) + " refused");
    }
    static void room(Conn* c, Ptr<Socket>, uint32_t) { c->pump(); }
    void accepted(Ptr<Socket> s, const Address& from) {
        InetSocketAddress f = InetSocketAddress::ConvertFrom(from);
        auto it = byKey_.find(key(f.GetIpv4(), f.GetPort()));
        if (it == byKey_.end()) throw std::runtime_error("accepted an unknown connection");
        rxConn_[PeekPointer(s)] = it->second;
        s->SetRecvCallback(MakeCallback(&Harness::readable, this));
    }
    void readable(Ptr<Socket> s) {
        Conn* c = rxConn_.at(PeekPointer(s));
        while (Ptr<Packet> p = s->Recv()) c->deliver(p->GetSize());
    }

    Net& net_;
    std::vector<Ptr<Socket>> listeners_;
    std::vector<std::unique_ptr<Conn>> conns_;
    std::unordered_map<uint64_t, Conn*> byKey_;
    std::unordered_map<Socket*, Conn*> rxConn_;
};

// Job runs one job's pattern epoch by epoch: a flow starts when every flow
// of its chunk into its source at an earlier step has arrived (netsim's
// rule), on one of its connection's ports drawn each epoch.
struct Job {
    JobSpec spec;
    Harness* h;
    int id, epochs;
    std::mt19937_64 rng;
    Pattern pat;
    int64_t version = 0;
    std::unique_ptr<Tuner> tuner;
    std::deque<Decision> next;
    std::vector<std::vector<int>> deps;  // flows waiting on each flow
    std::vector<int> inputs, pending, port;
    std::vector<double> fstart, fend;
    int left = 0, epoch = 0;
    double start = 0, netBytes = 0, epochTimeout = 0;
    std::map<int, Conn*> conns;  // by route slot
    json out = json::array();
    json decisions = json::array();
    std::function<void()> finished;

    int slot(const Flow& f, int p) const {
        int c = f.chunk % spec.chunks, r = spec.ranks;
        return ((c * r + f.src) * r + f.dst) * spec.ports + p;
    }
    Conn* conn(const Flow& f, int p) {
        int s = slot(f, p);
        auto it = conns.find(s);
        if (it != conns.end()) return it->second;
        int path = spec.routes.at(s);
        if (path < 0) throw std::runtime_error("job " + spec.name + ": no path for a flow between two hosts");
        return conns[s] = h->open(path);
    }
    void prepare() {
        size_t n = pat.flows.size();
        deps.assign(n, {});
        inputs.assign(n, 0);
        for (size_t f = 0; f < n; f++)
            for (size_t g = 0; g < n; g++) {
                const Flow &a = pat.flows[f], &b = pat.flows[g];
                if (b.chunk == a.chunk && b.dst == a.src && b.step < a.step) {
                    inputs[f]++;
                    deps[g].push_back(f);
                }
            }
    }
    // connectAll opens every port of the initial pattern's connections at
    // time 0, so that no measured epoch pays a handshake.
    void connectAll() {
        for (const Flow& f : pat.flows)
            for (int p = 0; p < spec.ports; p++) conn(f, p);
    }
    void startEpoch() {
        if (epoch == epochs) {
            finished();
            return;
        }
        while (!next.empty() && next.front().effective <= epoch) {
            pat = std::move(next.front().pattern);
            version = next.front().version;
            next.pop_front();
            prepare();
        }
        size_t n = pat.flows.size();
        pending = inputs;
        port.resize(n);
        std::uniform_int_distribution<int> draw(0, spec.ports - 1);
        for (size_t f = 0; f < n; f++) port[f] = draw(rng);
        fstart.assign(n, 0);
        fend.assign(n, 0);
        left = n;
        netBytes = 0;
        start = Simulator::Now().GetSeconds();
        Simulator::Schedule(Seconds(epochTimeout), &Job::watch, this, epoch);
        for (size_t f = 0; f < n; f++)
            if (pending[f] == 0) startFlow(f);
    }
    // watch fails the run when epoch e is still running: a stalled
    // connection would otherwise keep the external flows busy, at great
    // cost in wall time, until max_sim_s.
    void watch(int e) {
        if (epoch == e && left > 0)
            throw std::runtime_error("job " + spec.name + ": epoch " + std::to_string(e) + " not done after " +
                                     std::to_string(epochTimeout) + " simulated seconds (epoch_timeout_s); " +
                                     std::to_string(left) + " flows left");
    }
    void startFlow(int f) {
        const Flow& fl = pat.flows[f];
        fstart[f] = Simulator::Now().GetSeconds() - start;
        uint64_t bytes = std::max<uint64_t>(1, std::llround(fl.fraction * spec.bytes));
        Conn* c = conn(fl, port[f]);
        netBytes += bytes;
        c->unsent += bytes;
        c->rx.push_back({this, f, bytes});
        c->pump();
    }
    void complete(int f) {
        fend[f] = Simulator::Now().GetSeconds() - start;
        for (int d : deps[f])
            if (--pending[d] == 0) startFlow(d);
        if (--left == 0) endEpoch();
    }
    void endEpoch() {
        double elapsed = Simulator::Now().GetSeconds() - start, reduce = 0;
        if (getenv("REACT_NS3_DEBUG")) std::cerr << "job " << id << " epoch " << epoch << " " << elapsed * 1e6 << " us\n";
        std::vector<double> fct(fend.size());
        for (size_t f = 0; f < fend.size(); f++) {
            fct[f] = std::max(fend[f] - fstart[f], 1e-12);
            if (pat.flows[f].kind == 1) reduce = std::max(reduce, fend[f]);
        }
        out.push_back({{"elapsed", elapsed}, {"reduce", reduce}, {"net_bytes", netBytes}, {"version", version},
                       {"start", start}, {"flow_start", fstart}, {"flow_end", fend}});
        if (tuner) {
            tuner->submit(epoch, version, fct, elapsed);
            Decision d;
            while (tuner->decision(d)) {
                decisions.push_back({{"epoch", epoch}, {"version", d.version}, {"effective", d.effective}});
                next.push_back(std::move(d));
            }
        }
        epoch++;
        Simulator::Schedule(Seconds(spec.gap), &Job::startEpoch, this);
    }
};

void Conn::deliver(uint64_t n) {
    while (n > 0 && !rx.empty()) {
        uint64_t take = std::min(n, rx.front().left);
        rx.front().left -= take;
        n -= take;
        if (rx.front().left == 0) {
            Pending p = rx.front();
            rx.pop_front();
            p.job->complete(p.flow);
        }
    }
}

JobSpec parseJob(const json& j) {
    JobSpec s;
    s.name = j.at("name");
    s.op = j.at("op");
    s.algo = j.at("algo");
    s.ranks = j.at("ranks");
    s.root = j.at("root");
    s.bytes = j.at("bytes");
    s.hosts = j.at("hosts").get<std::vector<int>>();
    s.ports = j.at("ports");
    s.gap = j.at("gap");
    s.tune = j.at("tune");
    s.tunerConfig = j.value("tuner", "");
    s.chunks = j.at("chunks");
    s.routes = j.at("routes").get<std::vector<int>>();
    if (j.contains("flows"))
        for (const auto& f : j.at("flows"))
            s.flows.push_back(Flow{f.at(0), f.at(1), f.at(2), f.at(3), f.at(4), f.at(5)});
    if (s.ranks < 2 || int(s.hosts.size()) != s.ranks || s.ports < 1 || s.chunks < 1 || s.bytes <= 0)
        throw std::runtime_error("job " + s.name + ": bad ranks, hosts, ports, chunks or bytes");
    if (s.routes.size() != size_t(s.chunks) * s.ranks * s.ranks * s.ports)
        throw std::runtime_error("job " + s.name + ": routes has the wrong length");
    if (s.tune && !s.flows.empty()) throw std::runtime_error("job " + s.name + ": a tuned job starts from its generated pattern");
    return s;
}

int run(const std::string& inPath, const std::string& outPath) {
    auto wall0 = std::chrono::steady_clock::now();
    std::ifstream in(inPath);
    if (!in) throw std::runtime_error("cannot read " + inPath);
    json cfg = json::parse(in);
    if (cfg.at("format") != "react.ns3-input/v1") throw std::runtime_error(inPath + ": format is not react.ns3-input/v1");
    checkABI();

    const json& tcp = cfg.at("tcp");
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName("ns3::TcpDctcp")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(tcp.at("segment")));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(tcp.at("buffer")));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(tcp.at("buffer")));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(tcp.at("initial_cwnd")));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(tcp.at("delack_count")));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(tcp.at("min_rto"))));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(tcp.at("delack_timeout"))));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(tcp.at("sack")));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(tcp.at("timestamps")));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue("On"));

    NetSpec ns;
    ns.nodes = cfg.at("nodes");
    ns.hosts = cfg.at("hosts");
    for (const auto& l : cfg.at("links")) ns.links.push_back(Link{l.at(0), l.at(1), l.at(2), l.at(3)});
    ns.paths = cfg.at("paths").get<std::vector<std::vector<int>>>();
    const json& sw = cfg.at("switch");
    ns.redMin = sw.at("red_min");
    ns.redMax = sw.at("red_max");
    ns.bufferBytes = sw.at("buffer_bytes");
    ns.ackPriority = sw.at("ack_priority");
    ns.mtu = sw.at("mtu");
    Net net(ns);
    Harness h(net);
    Config::Connect("/NodeList/*/$ns3::TrafficControlLayer/RootQueueDiscList/*/Drop", MakeCallback(&qdrop));
    Config::Connect("/NodeList/*/$ns3::Ipv4L3Protocol/Drop", MakeCallback(&ipdrop));
    h.listen(ns.hosts);

    for (const auto& e : cfg.at("external")) {
        Conn* c = h.open(e.at("path"));
        c->infinite = true;
    }
    const int epochs = cfg.at("epochs");
    const uint64_t seed = cfg.at("seed");
    std::vector<std::unique_ptr<Job>> jobs;
    int running = 0;
    for (const auto& js : cfg.at("jobs")) {
        auto j = std::make_unique<Job>();
        j->spec = parseJob(js);
        j->h = &h;
        j->id = jobs.size();
        j->epochs = epochs;
        j->epochTimeout = cfg.at("epoch_timeout_s");
        j->rng.seed(seed * 1000003 + j->id);
        if (j->spec.flows.empty())
            j->pat = generatePattern(j->spec.op, j->spec.algo, j->spec.ranks, j->spec.root);
        else
            j->pat.flows = j->spec.flows;
        for (const Flow& f : j->pat.flows)
            if (f.src < 0 || f.src >= j->spec.ranks || f.dst < 0 || f.dst >= j->spec.ranks || f.src == f.dst)
                throw std::runtime_error("job " + j->spec.name + ": a flow's ranks are out of range");
        if (j->spec.tune) j->tuner = std::make_unique<Tuner>(j->pat, j->spec.bytes, j->spec.tunerConfig);
        j->prepare();
        j->connectAll();
        j->finished = [&running] {
            if (--running == 0) Simulator::Stop();
        };
        running++;
        Simulator::Schedule(Seconds(double(cfg.at("warmup"))), &Job::startEpoch, j.get());
        jobs.push_back(std::move(j));
    }
    double limit = cfg.at("max_sim_s");
    Simulator::Stop(Seconds(limit));
    Simulator::Run();
    double simEnd = Simulator::Now().GetSeconds();
    if (getenv("REACT_NS3_DEBUG")) h.dump();
    Simulator::Destroy();
    for (auto& j : jobs)
        if (j->epoch < epochs)
            throw std::runtime_error("job " + j->spec.name + " ran " + std::to_string(j->epoch) + " of " +
                                     std::to_string(epochs) + " epochs in " + std::to_string(limit) +
                                     " simulated seconds (max_sim_s)");
    json res = {{"format", "react.ns3-output/v1"},
                {"sim_s", simEnd},
                {"queue_drops", g_qdrops},
                {"ip_drops", g_ipdrops},
                {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count()},
                {"jobs", json::array()}};
    for (auto& j : jobs) res["jobs"].push_back({{"name", j->spec.name}, {"epochs", j->out}, {"decisions", j->decisions}});
    std::ofstream out(outPath);
    out << res.dump() << "\n";
    if (!out) throw std::runtime_error("cannot write " + outPath);
    return 0;
}

}  // namespace reactns3

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: react-ns3 INPUT.json OUTPUT.json (written by react sim --engine ns3)\n";
        return 2;
    }
    if (const char* log = std::getenv("REACT_NS3_LOG"); log != nullptr && *log != '\0') {
        if (react_init(REACT_LOG_INFO, log, 0) != REACT_OK) {
            char msg[REACT_ERROR_MAX];
            react_last_error(msg, sizeof msg);
            std::cerr << "react-ns3: REACT_NS3_LOG=" << log << ": " << msg << "\n";
            return 1;
        }
    }
    try {
        return reactns3::run(argv[1], argv[2]);
    } catch (const std::exception& e) {
        std::cerr << "react-ns3: " << e.what() << "\n";
        return 1;
    }
}
