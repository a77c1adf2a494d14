// Package cudart resolves the CUDA runtime at run time with purego, so that
// the library links against no CUDA at build time and loads where none is
// installed. Its job is to read CUDA event timings (the flows' start and end
// events the executor records) from a thread other than the training
// thread. It prefers the libcudart the process already has (the one torch
// loaded), found by soname.
package cudart

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ebitengine/purego"
)

// rtldNoload is glibc's RTLD_NOLOAD: succeed only for a library already
// loaded; purego does not name it.
const rtldNoload = 0x4

// CUDA runtime status codes this package interprets.
const (
	cudaSuccess       = 0
	cudaErrorNotReady = 600
)

// Names returns the libraries Load tries by default: $REACT_CUDART when set,
// then the sonames of the CUDA 13, 12 and 11 runtimes.
func Names() []string {
	var names []string
	if p := os.Getenv("REACT_CUDART"); p != "" {
		names = append(names, p)
	}
	return append(names, "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so")
}

// Unavailable says that no CUDA runtime could be loaded.
type Unavailable struct{ Tried []string }

func (e *Unavailable) Error() string {
	return "CUDA runtime not available: " + strings.Join(e.Tried, "; ")
}

// Runtime is a loaded CUDA runtime.
type Runtime struct {
	Name string // the library that was loaded

	deviceCount  func(n *int32) int32
	eventQuery   func(ev uintptr) int32
	eventElapsed func(ms *float32, start, end uintptr) int32
	errorString  func(code int32) string
}

// Load opens the first of names that loads and has the functions used here;
// the error, an *Unavailable, says why each failed.
func Load(names ...string) (*Runtime, error) {
	var tried []string
	bad := map[string]bool{} // loaded, but not a CUDA runtime
	for _, loadedOnly := range []bool{true, false} {
		for _, name := range names {
			if bad[name] {
				continue
			}
			mode := purego.RTLD_NOW | purego.RTLD_GLOBAL
			if loadedOnly {
				mode |= rtldNoload
			}
			lib, err := purego.Dlopen(name, mode)
			if err != nil {
				if !loadedOnly {
					tried = append(tried, err.Error()) // dlerror names the file
				}
				continue
			}
			r, err := bind(lib)
			if err != nil {
				bad[name] = true
				tried = append(tried, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			r.Name = name
			return r, nil
		}
	}
	return nil, &Unavailable{tried}
}

func bind(lib uintptr) (*Runtime, error) {
	r := &Runtime{}
	for _, f := range []struct {
		name string
		fptr any
	}{
		{"cudaGetDeviceCount", &r.deviceCount},
		{"cudaEventQuery", &r.eventQuery},
		{"cudaEventElapsedTime", &r.eventElapsed},
		{"cudaGetErrorString", &r.errorString},
	} {
		sym, err := purego.Dlsym(lib, f.name)
		if err != nil {
			return nil, fmt.Errorf("no symbol %s", f.name)
		}
		purego.RegisterFunc(f.fptr, sym)
	}
	return r, nil
}

func (r *Runtime) fail(call string, code int32) error {
	return fmt.Errorf("%s: CUDA error %d (%s)", call, code, r.errorString(code))
}

// DeviceCount returns the number of CUDA devices.
func (r *Runtime) DeviceCount() (int, error) {
	var n int32
	if code := r.deviceCount(&n); code != cudaSuccess {
		return 0, r.fail("cudaGetDeviceCount", code)
	}
	return int(n), nil
}

// ErrNotReady says an event has not completed yet.
var ErrNotReady = errors.New("CUDA event not complete yet")

// Elapsed returns the seconds between two recorded events (cudaEvent_t
// values, as torch.cuda.Event.cuda_event gives them), or ErrNotReady when
// either has not completed. It never waits. The events must belong to the
// calling thread's current device.
func (r *Runtime) Elapsed(start, end uintptr) (float64, error) {
	if start == 0 || end == 0 {
		return 0, errors.New("null CUDA event")
	}
	for _, ev := range []uintptr{start, end} {
		switch code := r.eventQuery(ev); code {
		case cudaSuccess:
		case cudaErrorNotReady:
			return 0, ErrNotReady
		default:
			return 0, r.fail("cudaEventQuery", code)
		}
	}
	var ms float32
	if code := r.eventElapsed(&ms, start, end); code != cudaSuccess {
		if code == cudaErrorNotReady {
			return 0, ErrNotReady
		}
		return 0, r.fail("cudaEventElapsedTime", code)
	}
	return float64(ms) / 1e3, nil
}
