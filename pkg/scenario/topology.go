package scenario

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/react-torch/react-torch/pkg/topo"
)

func buildTopology(t *TopologySpec, read func(string) ([]byte, error)) (*topo.Topology, error) {
	capBps := t.Capacity
	if capBps == 0 {
		capBps = DefaultCapacity
	}
	lat := DefaultLatency
	if t.Latency != nil {
		lat = *t.Latency
	}
	file := func() ([]byte, error) {
		if t.File == "" {
			return nil, fmt.Errorf("kind %q needs a file", t.Kind)
		}
		if read == nil {
			return nil, fmt.Errorf("file %q: no way to read files here", t.File)
		}
		data, err := read(t.File)
		if err != nil {
			return nil, fmt.Errorf("file %q: %w", t.File, err)
		}
		return data, nil
	}
	var net *topo.Topology
	var err error
	switch t.Kind {
	case "star":
		net, err = topo.Star(t.Hosts, capBps, lat)
	case "fattree":
		net, err = topo.FatTree(t.K, capBps, lat)
	case "clos":
		net, err = topo.Clos(t.ToRs, t.Aggs, t.HostsPerToR, capBps, lat)
	case "json":
		var data []byte
		if data, err = file(); err == nil {
			net, err = topo.FromJSON(data)
		}
	case "alibaba_csv":
		var data []byte
		if data, err = file(); err == nil {
			net, err = alibabaCSV(data, t.HostsPerToR, capBps, lat)
			if err != nil {
				err = fmt.Errorf("file %q: %w", t.File, err)
			}
		}
	default:
		return nil, fmt.Errorf("unknown kind %q (want star, fattree, clos, json or alibaba_csv)", t.Kind)
	}
	if err != nil {
		return nil, err
	}
	if t.ECMPSeed != nil {
		net = net.WithSeed(*t.ECMPSeed)
	}
	return net, nil
}

// alibabaCSV builds the two-tier network of the Alibaba Lingjun 2023 trace
// (columns ip, DSW, PSW, ASW: host, core, aggregation and ToR switch): hosts
// ToR by ToR in file order, every ToR wired to every aggregation switch in
// the file. The single core switch is left out: it adds no path between two
// ToRs that the aggregation layer does not already give.
func alibabaCSV(data []byte, perToR int, capBps, lat float64) (*topo.Topology, error) {
	r := csv.NewReader(bytes.NewReader(data))
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{"ip", "PSW", "ASW"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("csv header %q has no column %q", strings.Join(head, ","), c)
		}
	}
	byToR := map[string][]string{}
	aggSet := map[string]bool{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		tor, agg := rec[col["ASW"]], rec[col["PSW"]]
		if tor == "" || agg == "" {
			return nil, fmt.Errorf("csv line %d: empty ToR or aggregation switch", line)
		}
		byToR[tor] = append(byToR[tor], rec[col["ip"]])
		aggSet[agg] = true
	}
	if len(byToR) == 0 {
		return nil, errors.New("csv: no hosts")
	}
	tors := sortedNames(byToR)
	aggs := sortedNames(aggSet)
	var names []string
	var hostToR []int
	for i, t := range tors {
		hs := byToR[t]
		if perToR > 0 && len(hs) > perToR {
			hs = hs[:perToR]
		}
		for range hs {
			names = append(names, fmt.Sprintf("h%d", len(names)))
			hostToR = append(hostToR, i)
		}
	}
	hosts := len(names)
	names = append(append(names, tors...), aggs...)
	var links []topo.Link
	cable := func(a, b int) {
		links = append(links, topo.Link{From: a, To: b, Capacity: capBps, Latency: lat}, topo.Link{From: b, To: a, Capacity: capBps, Latency: lat})
	}
	for h, t := range hostToR {
		cable(h, hosts+t)
	}
	for t := range tors {
		for a := range aggs {
			cable(hosts+t, hosts+len(tors)+a)
		}
	}
	return topo.New(hosts, len(tors)+len(aggs), links, names)
}

// sortedNames sorts switch names like S2 < S10: by their non-digit prefix,
// then by the number that ends them.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	split := func(s string) (string, int) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, err := strconv.Atoi(s[i:])
		if err != nil {
			return s, -1
		}
		return s[:i], n
	}
	slices.SortFunc(out, func(a, b string) int {
		pa, na := split(a)
		pb, nb := split(b)
		return cmp.Or(strings.Compare(pa, pb), cmp.Compare(na, nb), strings.Compare(a, b))
	})
	return out
}

// findCable returns the link from -> to and, when there is one, its reverse.
func findCable(net *topo.Topology, l LinkRef) ([]topo.LinkID, error) {
	from, to := -1, -1
	for n := 0; n < net.Nodes(); n++ {
		switch net.Name(n) {
		case l.From:
			from = n
		case l.To:
			to = n
		}
	}
	if from < 0 {
		return nil, fmt.Errorf("unknown node %q", l.From)
	}
	if to < 0 {
		return nil, fmt.Errorf("unknown node %q", l.To)
	}
	id, ok := net.Find(from, to)
	if !ok {
		return nil, fmt.Errorf("no link %s -> %s", l.From, l.To)
	}
	out := []topo.LinkID{id}
	if back, ok := net.Find(to, from); ok {
		out = append(out, back)
	}
	return out, nil
}
