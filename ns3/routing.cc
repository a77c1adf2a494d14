// routing.cc: PathRouting, forwarding by a hash table of destinations.
#include "routing.h"

using namespace ns3;

namespace reactns3 {

TypeId PathRouting::GetTypeId() {
    static TypeId tid =
        TypeId("reactns3::PathRouting").SetParent<Ipv4RoutingProtocol>().AddConstructor<PathRouting>();
    return tid;
}

Ptr<Ipv4Route> PathRouting::route(Ipv4Address dst, const Hop& h) const {
    Ptr<Ipv4Route> r = Create<Ipv4Route>();
    r->SetDestination(dst);
    r->SetGateway(h.gw);
    r->SetOutputDevice(ipv4_->GetNetDevice(h.ifIndex));
    r->SetSource(ipv4_->GetAddress(h.ifIndex, 0).GetLocal());
    return r;
}

Ptr<Ipv4Route> PathRouting::RouteOutput(Ptr<Packet>, const Ipv4Header& header, Ptr<NetDevice>,
                                        Socket::SocketErrno& err) {
    auto it = table_.find(header.GetDestination().Get());
    if (it != table_.end()) {
        err = Socket::ERROR_NOTERROR;
        return route(header.GetDestination(), it->second);
    }
    if (hasDef_) {
        err = Socket::ERROR_NOTERROR;
        return route(header.GetDestination(), def_);
    }
    err = Socket::ERROR_NOROUTETOHOST;
    return nullptr;
}

bool PathRouting::RouteInput(Ptr<const Packet> p, const Ipv4Header& header, Ptr<const NetDevice> idev,
                             UnicastForwardCallback ucb, MulticastForwardCallback, LocalDeliverCallback lcb,
                             ErrorCallback) {
    uint32_t iif = ipv4_->GetInterfaceForDevice(idev);
    if (ipv4_->IsDestinationAddress(header.GetDestination(), iif)) {
        lcb(p, header, iif);
        return true;
    }
    auto it = table_.find(header.GetDestination().Get());
    if (it != table_.end()) {
        ucb(route(header.GetDestination(), it->second), p, header);
        return true;
    }
    if (hasDef_) {
        ucb(route(header.GetDestination(), def_), p, header);
        return true;
    }
    return false;
}

}  // namespace reactns3
