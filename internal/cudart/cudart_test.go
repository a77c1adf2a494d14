package cudart

import (
	"errors"
	"strings"
	"testing"
)

// TestUnavailable runs everywhere: a library that does not exist, and one
// that exists but is not the CUDA runtime, both give a clear *Unavailable.
func TestUnavailable(t *testing.T) {
	_, err := Load("libreact-no-such-cudart.so", "libc.so.6")
	var u *Unavailable
	if !errors.As(err, &u) || len(u.Tried) != 2 {
		t.Fatalf("error %v, want an Unavailable naming both tries", err)
	}
	msg := err.Error()
	for _, want := range []string{"CUDA runtime not available", "libreact-no-such-cudart.so", "libc.so.6: no symbol cudaGetDeviceCount"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if _, err := Load(); !errors.As(err, &u) {
		t.Fatalf("no names: %v", err)
	}
}

func TestNamesHonourEnv(t *testing.T) {
	t.Setenv("REACT_CUDART", "/opt/x/libcudart.so.12")
	if n := Names(); n[0] != "/opt/x/libcudart.so.12" || len(n) != 5 {
		t.Fatalf("names %v", n)
	}
}

// TestRuntime runs only where a CUDA runtime is installed.
func TestRuntime(t *testing.T) {
	r, err := Load(Names()...)
	if err != nil {
		t.Skipf("no CUDA runtime here: %v", err)
	}
	n, err := r.DeviceCount()
	t.Logf("%s: %d devices (%v)", r.Name, n, err)
	if _, err := r.Elapsed(0, 1); err == nil {
		t.Fatal("Elapsed accepted a null event")
	}
}
