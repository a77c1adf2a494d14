// Package layout is a group's ranks by host, from the host identity each
// rank found for itself: flows between ranks of one host never touch the
// network, so a group that spans hosts runs its patterns over hosts, one
// rail (the i-th rank of every host) on each shard.
package layout

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Modes are the values of the hosts setting (REACT_HOSTS).
var Modes = []string{"auto", "flat", "hier"}

// Layout is a group's ranks by host. Hosts[h] lists the ranks on host h in
// rank order; hosts are ordered by their lowest rank, so every rank that
// sees the same identities builds the same layout.
type Layout struct {
	Hosts [][]int `json:"hosts"`
	// HostOf and LocalOf are each rank's host and its place among the
	// host's ranks.
	HostOf  []int `json:"host_of"`
	LocalOf []int `json:"local_of"`
	// Rails: local rank i of every host runs the inter-host pattern on its
	// shard; a host with fewer ranks bounds them (its ranks must cover
	// every rail).
	Rails int `json:"rails"`
	// Hier: the group runs over hosts (hierarchical, under its mode)
	Hier bool   `json:"hier"`
	Text string `json:"text"`
}

// Of builds the layout of a group whose rank r found identity ids[r],
// under hosts mode mode: hier runs over hosts always, flat never, auto
// where the group spans several hosts and one of them runs several of its
// ranks (the ranks of one machine stand for hosts: tests, benchmarks, a
// first try).
func Of(ids []string, mode string) (Layout, error) {
	if len(ids) == 0 {
		return Layout{}, errors.New("layout: no ranks")
	}
	if !slices.Contains(Modes, mode) {
		return Layout{}, fmt.Errorf("layout: hosts mode %q, want %s", mode, strings.Join(Modes, ", "))
	}
	l := Layout{HostOf: make([]int, len(ids)), LocalOf: make([]int, len(ids))}
	at := map[string]int{}
	for r, id := range ids {
		h, ok := at[id]
		if !ok {
			h = len(l.Hosts)
			at[id] = h
			l.Hosts = append(l.Hosts, nil)
		}
		l.HostOf[r], l.LocalOf[r] = h, len(l.Hosts[h])
		l.Hosts[h] = append(l.Hosts[h], r)
	}
	sizes := make([]string, len(l.Hosts))
	l.Rails = len(ids)
	for h, rs := range l.Hosts {
		l.Rails = min(l.Rails, len(rs))
		sizes[h] = strconv.Itoa(len(rs))
	}
	if slices.Equal(sizes, slices.Repeat(sizes[:1], len(sizes))) {
		l.Text = fmt.Sprintf("%d host(s) x %s rank(s)", len(l.Hosts), sizes[0])
	} else {
		l.Text = fmt.Sprintf("%d hosts of %s ranks", len(l.Hosts), strings.Join(sizes, "+"))
	}
	l.Hier = mode == "hier" || mode == "auto" && len(l.Hosts) > 1 && slices.ContainsFunc(l.Hosts, func(rs []int) bool { return len(rs) > 1 })
	return l, nil
}
