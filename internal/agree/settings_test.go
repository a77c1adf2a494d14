package agree

import (
	"encoding/json"
	"testing"
)

func TestSettings(t *testing.T) {
	set := func(js string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		every []string
		want  string
	}{
		{[]string{`{}`, `{"tune": true, "Lag": 5}`, `{"algo_allreduce": "tree", "Epsilon": 0.2}`}, ""},
		{[]string{`{"Lag": 2}`, `{"Lag":2 }`}, ""},
		{[]string{`{"leader": 9}`, `{"leader": 9}`, `{"segment_bytes": -1}`, `{"leader": 9}`},
			"invalid settings for a react group of 4 ranks: ranks 0, 1, 3: REACT_LEADER=9: the leader must be a rank of the group, 0 to 3; " +
				"rank 2: REACT_SEGMENT_BYTES=-1: want >= 0 (0 sends whole messages)"},
		{[]string{`{"algo_allreduce": "ring"}`, `{}`, `{"algo_allreduce": "ring", "Lag": 2}`},
			`the ranks of a react group must share these settings: REACT_ALGO_ALLREDUCE is "ring" on ranks 0, 2, "tree" on rank 1; ` +
				`REACT_LAG is 5 on ranks 0, 1, 2 on rank 2`},
	} {
		every := make([]map[string]json.RawMessage, len(tc.every))
		for i, js := range tc.every {
			every[i] = set(js)
		}
		if got := Settings(every, len(every)); got != tc.want {
			t.Errorf("Settings(%v)\n got %q\nwant %q", tc.every, got, tc.want)
		}
	}
}
