package topo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The JSON form of a topology:
//
//	{
//	  "hosts":    ["h0", "h1", "h2"],   // host names, numbered in this order
//	  "switches": ["sw"],               // switch names, numbered after the hosts
//	  "capacity": 100e9,                // optional default link capacity, bits/s
//	  "latency":  1e-6,                 // optional default link latency, s
//	  "seed":     7,                    // optional ECMP seed (default 0)
//	  "links": [
//	    {"from": "h0", "to": "sw"},                       // a cable: both directions
//	    {"from": "h1", "to": "sw", "capacity": 50e9},     // overrides the default
//	    {"from": "sw", "to": "h2", "directed": true},     // one direction only
//	    {"from": "h2", "to": "sw", "latency": 2e-6, "directed": true}
//	  ]
//	}
//
// A cable becomes two links, from->to then to->from, with the same capacity
// and latency. Unknown fields are errors, so a misspelt key is not silently
// ignored.
type jsonTopo struct {
	Hosts    []string   `json:"hosts"`
	Switches []string   `json:"switches"`
	Capacity *float64   `json:"capacity,omitempty"`
	Latency  *float64   `json:"latency,omitempty"`
	Seed     uint64     `json:"seed,omitempty"`
	Links    []jsonLink `json:"links"`
}

type jsonLink struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Capacity *float64 `json:"capacity,omitempty"`
	Latency  *float64 `json:"latency,omitempty"`
	Directed bool     `json:"directed,omitempty"`
}

// FromJSON reads the JSON form above.
func FromJSON(data []byte) (*Topology, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j jsonTopo
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("topo: json: %w", err)
	}
	if dec.More() {
		return nil, errors.New("topo: json: data after the topology object")
	}
	if len(j.Hosts) == 0 {
		return nil, errors.New("topo: json: no hosts")
	}
	names := append(append([]string(nil), j.Hosts...), j.Switches...)
	index := make(map[string]int, len(names))
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("topo: json: node %d has an empty name", i)
		}
		if _, dup := index[n]; dup {
			return nil, fmt.Errorf("topo: json: node name %q used twice", n)
		}
		index[n] = i
	}
	links := make([]Link, 0, 2*len(j.Links))
	for i, l := range j.Links {
		from, ok := index[l.From]
		if !ok {
			return nil, fmt.Errorf("topo: json: link %d: unknown node %q in from", i, l.From)
		}
		to, ok := index[l.To]
		if !ok {
			return nil, fmt.Errorf("topo: json: link %d: unknown node %q in to", i, l.To)
		}
		c, lat := l.Capacity, l.Latency
		if c == nil {
			c = j.Capacity
		}
		if lat == nil {
			lat = j.Latency
		}
		if c == nil {
			return nil, fmt.Errorf("topo: json: link %d (%s-%s): no capacity and no default capacity", i, l.From, l.To)
		}
		if lat == nil {
			return nil, fmt.Errorf("topo: json: link %d (%s-%s): no latency and no default latency", i, l.From, l.To)
		}
		links = append(links, Link{From: from, To: to, Capacity: *c, Latency: *lat})
		if !l.Directed {
			links = append(links, Link{From: to, To: from, Capacity: *c, Latency: *lat})
		}
	}
	t, err := New(len(j.Hosts), len(j.Switches), links, names)
	if err != nil {
		return nil, err
	}
	t.seed = j.Seed
	return t, nil
}

// MarshalJSON writes the JSON form; a link followed by its exact reverse
// is written as one cable.
func (t *Topology) MarshalJSON() ([]byte, error) {
	j := jsonTopo{Hosts: t.names[:t.hosts], Switches: t.names[t.hosts:], Seed: t.seed, Links: []jsonLink{}}
	if j.Switches == nil {
		j.Switches = []string{}
	}
	for i := 0; i < len(t.links); i++ {
		l := t.links[i]
		c, lat := l.Capacity, l.Latency
		jl := jsonLink{From: t.names[l.From], To: t.names[l.To], Capacity: &c, Latency: &lat, Directed: true}
		if i+1 < len(t.links) {
			if r := t.links[i+1]; r.From == l.To && r.To == l.From && r.Capacity == c && r.Latency == lat {
				jl.Directed = false
				i++
			}
		}
		j.Links = append(j.Links, jl)
	}
	return json.Marshal(j)
}
