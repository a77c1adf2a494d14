// net.h: the packet-level network of one harness run: nodes, cables,
// queues and routes, built from the flat input `react sim --engine ns3`
// writes (docs/simulation.md, "Packet level").
#ifndef REACT_NS3_NET_H
#define REACT_NS3_NET_H

#include <map>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"

namespace reactns3 {

// Link is one direction of a cable, as Go's topo numbers it.
struct Link {
    int from, to;
    double capacity;  // bits/s
    double latency;   // s
};

// NetSpec is what the network needs from the input.
struct NetSpec {
    int nodes = 0, hosts = 0;
    std::vector<Link> links;
    std::vector<std::vector<int>> paths;  // node lists, host to host
    // The paper's §7.3 switch: RED/ECN marking between redMin and redMax
    // packets, bufferBytes of buffer a port, ACKs in a strict-priority band.
    int redMin = 32, redMax = 60;
    double bufferBytes = 32e6;
    bool ackPriority = true;
    int mtu = 1500;
};

// Net is the built network. Path p's packets are addressed to pathAddr(p),
// an address of p's last host that only p's switches route, each along p:
// ECMP's per-connection choice made in advance (Go draws it as the fluid
// engine does) and pinned by destination address.
class Net {
  public:
    explicit Net(const NetSpec& spec);
    ns3::Ptr<ns3::Node> node(int n) const { return nodes_.Get(n); }
    ns3::Ipv4Address pathAddr(int path) const;
    // primary is host h's own address (sources bind to it; ACKs return to it).
    ns3::Ipv4Address primary(int h) const { return primary_.at(h); }
    int pathSrc(int path) const { return spec_.paths.at(path).front(); }

  private:
    struct Port {
        uint32_t ifIndex;
        ns3::Ipv4Address peer;  // the neighbour's address on this cable
    };
    NetSpec spec_;
    ns3::NodeContainer nodes_;
    std::vector<std::map<int, Port>> ports_;  // node -> neighbour -> port
    std::vector<ns3::Ipv4Address> primary_;
};

}  // namespace reactns3

#endif
