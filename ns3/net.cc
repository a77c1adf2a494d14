// net.cc: builds the §7.3 network: point-to-point cables at each
// direction's capacity and latency, a strict-priority queue on every port
// (pure ACKs first, data through RED with ECN marking), DCTCP set up by
// main, routes that pin each drawn ECMP path (routing.h).
#include "net.h"

#include <stdexcept>

#include <deque>

#include "ns3/point-to-point-module.h"
#include "routing.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

namespace reactns3 {

namespace {

// AckFilter sends what is no bigger than a pure ACK (IP + TCP headers and
// options, no payload) to band 0 of the priority queue, the rest to band 1:
// the paper prioritises ACKs.
class AckFilter : public Ipv4PacketFilter {
  public:
    static TypeId GetTypeId() {
        static TypeId tid = TypeId("reactns3::AckFilter").SetParent<Ipv4PacketFilter>().AddConstructor<AckFilter>();
        return tid;
    }

  private:
    int32_t DoClassify(Ptr<QueueDiscItem> item) const override { return item->GetSize() <= 128 ? 0 : 1; }
};

std::string rate(double bps) { return std::to_string(static_cast<uint64_t>(bps)) + "bps"; }

}  // namespace

Net::Net(const NetSpec& spec) : spec_(spec) {
    if (spec.hosts < 1 || spec.nodes < spec.hosts) throw std::runtime_error("input: bad node or host count");
    nodes_.Create(spec.nodes);
    InternetStackHelper stack;
    stack.SetRoutingHelper(PathRoutingHelper());
    stack.Install(nodes_);
    ports_.resize(spec.nodes);
    primary_.resize(spec.hosts);

    // Cables: the two directions of every pair of nodes linked both ways.
    std::map<std::pair<int, int>, const Link*> dir;
    for (const Link& l : spec.links) {
        if (l.from < 0 || l.from >= spec.nodes || l.to < 0 || l.to >= spec.nodes || l.from == l.to)
            throw std::runtime_error("input: link " + std::to_string(l.from) + " -> " + std::to_string(l.to) +
                                     " out of range");
        if (l.capacity <= 0) throw std::runtime_error("input: a link of capacity 0 (a cut to 0 cannot carry packets)");
        dir[{l.from, l.to}] = &l;
    }
    const uint32_t packets = std::max<uint32_t>(spec.redMax + 1, spec.bufferBytes / spec.mtu);
    uint32_t cable = 0;
    for (const auto& [key, l] : dir) {
        auto [a, b] = key;
        if (a > b) continue;
        auto back = dir.find({b, a});
        if (back == dir.end()) throw std::runtime_error("input: a one-way link; every link must be a cable");
        PointToPointHelper p2p;
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(l->latency)));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(spec.mtu));
        // A short device queue leaves the backlog to the queue disc,
        // where it is marked and prioritised.
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("2p"));
        NetDeviceContainer dev = p2p.Install(nodes_.Get(a), nodes_.Get(b));
        dev.Get(0)->SetAttribute("DataRate", DataRateValue(DataRate(rate(l->capacity))));
        dev.Get(1)->SetAttribute("DataRate", DataRateValue(DataRate(rate(back->second->capacity))));

        TrafficControlHelper tch;
        uint16_t root = tch.SetRootQueueDisc("ns3::PrioQueueDisc", "Priomap",
                                             StringValue("1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"));
        auto cls = tch.AddQueueDiscClasses(root, 2, "ns3::QueueDiscClass");
        tch.AddChildQueueDisc(root, cls[0], "ns3::FifoQueueDisc", "MaxSize", StringValue("100000p"));
        tch.AddChildQueueDisc(root, cls[1], "ns3::RedQueueDisc", "MinTh", DoubleValue(spec.redMin), "MaxTh",
                              DoubleValue(spec.redMax), "MaxSize",
                              QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, packets)), "QW", DoubleValue(1.0),
                              "LInterm", DoubleValue(1.0), "UseEcn", BooleanValue(true), "UseHardDrop",
                              BooleanValue(false), "Gentle", BooleanValue(false), "MeanPktSize",
                              UintegerValue(spec.mtu), "LinkBandwidth",
                              DataRateValue(DataRate(rate(l->capacity))), "LinkDelay",
                              TimeValue(Seconds(l->latency)));
        QueueDiscContainer qd = tch.Install(dev);
        if (spec.ackPriority)
            for (uint32_t i = 0; i < qd.GetN(); i++) qd.Get(i)->AddPacketFilter(CreateObject<AckFilter>());

        Ipv4AddressHelper addr;
        uint32_t base = (10u << 24) + 4 * cable++;
        if (cable >= (1u << 22)) throw std::runtime_error("input: too many cables");
        addr.SetBase(Ipv4Address(base), Ipv4Mask("255.255.255.252"));
        Ipv4InterfaceContainer ifs = addr.Assign(dev);
        auto ipv4a = nodes_.Get(a)->GetObject<Ipv4>(), ipv4b = nodes_.Get(b)->GetObject<Ipv4>();
        ports_[a][b] = Port{static_cast<uint32_t>(ipv4a->GetInterfaceForDevice(dev.Get(0))), ifs.GetAddress(1)};
        ports_[b][a] = Port{static_cast<uint32_t>(ipv4b->GetInterfaceForDevice(dev.Get(1))), ifs.GetAddress(0)};
        if (a < spec.hosts) primary_[a] = ifs.GetAddress(0);
        if (b < spec.hosts) throw std::runtime_error("input: two hosts cabled together");
    }
    auto routing = [this](int n) {
        return DynamicCast<PathRouting>(nodes_.Get(n)->GetObject<Ipv4>()->GetRoutingProtocol());
    };
    for (int h = 0; h < spec.hosts; h++) {
        if (ports_[h].size() != 1)
            throw std::runtime_error("input: host " + std::to_string(h) + " has " + std::to_string(ports_[h].size()) +
                                     " cables, the harness wants one");
        const Port& up = ports_[h].begin()->second;
        routing(h)->setDefault(up.ifIndex, up.peer);
    }
    // Return traffic (ACKs, to a source's primary address) takes one
    // shortest path, the first a breadth-first search finds; the pinned
    // paths below carry the data.
    for (int h = 0; h < spec.hosts; h++) {
        std::vector<int> dist(spec.nodes, -1);
        std::deque<int> q{h};
        dist[h] = 0;
        while (!q.empty()) {
            int u = q.front();
            q.pop_front();
            for (const auto& [v, port] : ports_[u]) {
                if (dist[v] >= 0 || (v < spec.hosts && v != h)) continue;
                dist[v] = dist[u] + 1;
                // v reaches h through u.
                const Port& toU = ports_[v].at(u);
                if (v >= spec.hosts) routing(v)->add(primary_[h], toU.ifIndex, toU.peer);
                q.push_back(v);
            }
        }
    }
    for (size_t p = 0; p < spec.paths.size(); p++) {
        const auto& ns = spec.paths[p];
        if (ns.size() < 2 || ns.front() >= spec.hosts || ns.back() >= spec.hosts)
            throw std::runtime_error("input: path " + std::to_string(p) + " does not run host to host");
        Ipv4Address dst = pathAddr(p);
        const Port& last = ports_.at(ns.back()).begin()->second;
        nodes_.Get(ns.back())->GetObject<Ipv4>()->AddAddress(last.ifIndex,
                                                              Ipv4InterfaceAddress(dst, Ipv4Mask("255.255.255.255")));
        for (size_t i = 1; i + 1 < ns.size(); i++) {
            auto it = ports_.at(ns[i]).find(ns[i + 1]);
            if (it == ports_[ns[i]].end() || !ports_[ns[i - 1]].count(ns[i]))
                throw std::runtime_error("input: path " + std::to_string(p) + " uses a missing cable");
            routing(ns[i])->add(dst, it->second.ifIndex, it->second.peer);
        }
    }
}

Ipv4Address Net::pathAddr(int path) const { return Ipv4Address((11u << 24) + 1 + path); }

}  // namespace reactns3
