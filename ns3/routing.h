// routing.h: forwarding by exact destination address from a hash table.
// ns-3's static and global routing scan their route lists per packet,
// which cost most of a run's time with a route per pinned ECMP path; a
// table lookup does not.
#ifndef REACT_NS3_ROUTING_H
#define REACT_NS3_ROUTING_H

#include <unordered_map>

#include "ns3/internet-module.h"

namespace reactns3 {

class PathRouting : public ns3::Ipv4RoutingProtocol {
  public:
    static ns3::TypeId GetTypeId();
    // add routes packets to dst out of interface ifIndex, to gateway gw.
    void add(ns3::Ipv4Address dst, uint32_t ifIndex, ns3::Ipv4Address gw) { table_[dst.Get()] = {ifIndex, gw}; }
    // setDefault routes what the table lacks (a host's uplink).
    void setDefault(uint32_t ifIndex, ns3::Ipv4Address gw) { def_ = {ifIndex, gw}, hasDef_ = true; }

    ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& header,
                                         ns3::Ptr<ns3::NetDevice> oif, ns3::Socket::SocketErrno& err) override;
    bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header, ns3::Ptr<const ns3::NetDevice> idev,
                    UnicastForwardCallback ucb, MulticastForwardCallback mcb, LocalDeliverCallback lcb,
                    ErrorCallback ecb) override;
    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
    void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
    void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper>, ns3::Time::Unit) const override {}

  private:
    struct Hop {
        uint32_t ifIndex;
        ns3::Ipv4Address gw;
    };
    ns3::Ptr<ns3::Ipv4Route> route(ns3::Ipv4Address dst, const Hop& h) const;
    ns3::Ptr<ns3::Ipv4> ipv4_;
    std::unordered_map<uint32_t, Hop> table_;
    Hop def_{};
    bool hasDef_ = false;
};

class PathRoutingHelper : public ns3::Ipv4RoutingHelper {
  public:
    PathRoutingHelper* Copy() const override { return new PathRoutingHelper(*this); }
    ns3::Ptr<ns3::Ipv4RoutingProtocol> Create(ns3::Ptr<ns3::Node>) const override {
        return ns3::CreateObject<PathRouting>();
    }
};

}  // namespace reactns3

#endif
