package layout

import (
	"reflect"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		ids   []string
		mode  string
		hosts [][]int
		rails int
		hier  bool
		text  string
	}{
		{[]string{"a", "a", "b", "b"}, "auto", [][]int{{0, 1}, {2, 3}}, 2, true, "2 host(s) x 2 rank(s)"},
		{[]string{"b", "a", "b", "a", "a"}, "auto", [][]int{{0, 2}, {1, 3, 4}}, 2, true, "2 hosts of 2+3 ranks"},
		// one rank a host: nothing to gain over hosts
		{[]string{"x", "y", "z"}, "auto", [][]int{{0}, {1}, {2}}, 1, false, "3 host(s) x 1 rank(s)"},
		{[]string{"x", "y", "z"}, "hier", [][]int{{0}, {1}, {2}}, 1, true, "3 host(s) x 1 rank(s)"},
		// one host: its ranks stand for hosts
		{[]string{"h", "h", "h", "h"}, "auto", [][]int{{0, 1, 2, 3}}, 4, false, "1 host(s) x 4 rank(s)"},
		{[]string{"h", "h", "h", "h"}, "hier", [][]int{{0, 1, 2, 3}}, 4, true, "1 host(s) x 4 rank(s)"},
		{[]string{"a", "a", "b", "b"}, "flat", [][]int{{0, 1}, {2, 3}}, 2, false, "2 host(s) x 2 rank(s)"},
	} {
		l, err := Of(tc.ids, tc.mode)
		if err != nil {
			t.Fatalf("%v %s: %v", tc.ids, tc.mode, err)
		}
		if !reflect.DeepEqual(l.Hosts, tc.hosts) || l.Rails != tc.rails || l.Hier != tc.hier || l.Text != tc.text {
			t.Errorf("%v %s: %+v, want hosts %v rails %d hier %v %q", tc.ids, tc.mode, l, tc.hosts, tc.rails, tc.hier, tc.text)
		}
		for h, rs := range l.Hosts {
			for i, r := range rs {
				if l.HostOf[r] != h || l.LocalOf[r] != i {
					t.Errorf("%v: rank %d at host %d local %d, want %d %d", tc.ids, r, l.HostOf[r], l.LocalOf[r], h, i)
				}
			}
		}
	}
}

func TestOfRefuses(t *testing.T) {
	if _, err := Of(nil, "auto"); err == nil {
		t.Error("no ranks: no error")
	}
	if _, err := Of([]string{"a"}, "rails"); err == nil || err.Error() != `layout: hosts mode "rails", want auto, flat, hier` {
		t.Errorf("unknown mode: %v", err)
	}
}
