// The public react_* symbols of libreact.so. Each refuses a call from a
// forked child before it reaches Go (a forked child cannot run Go code: its
// runtime threads did not survive the fork) and forwards the rest to the
// react_go_* function of the same name in main.go. react_last_error is
// plain C, so that it works in a forked child too.
//
// This file is also the compile-time check that capi/react.h and the Go
// exports agree: every definition below must match its prototype in
// react.h, and the static assertions pin each react_go_* prototype that cgo
// generated (in _cgo_export.h) to the exact C types the shim passes.

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "react.h"
#include "_cgo_export.h"

#define HIDDEN __attribute__((visibility("hidden")))

#define SAME_TYPE(f, T) \
    _Static_assert(_Generic(&(f), T: 1, default: 0), #f " does not have the prototype the shim expects")

SAME_TYPE(react_go_abi_version, int (*)(void));
SAME_TYPE(react_go_init, int (*)(int, char*, int));
SAME_TYPE(react_go_pattern_generate, int (*)(char*, char*, int, int, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_pattern_layout, int (*)(uint8_t*, size_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_pattern_plan, int (*)(uint8_t*, size_t, int, int64_t, int, int64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_tuner_settings, int (*)(uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_tuner_create, int (*)(uint8_t*, size_t, double, char*, uint64_t*));
SAME_TYPE(react_go_tuner_close, int (*)(uint64_t));
SAME_TYPE(react_go_tuner_submit, int (*)(uint64_t, uint8_t*, size_t));
SAME_TYPE(react_go_tuner_decision, int (*)(uint64_t, int64_t*, int64_t*, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_tuner_report, int (*)(uint64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_leader_create, int (*)(uint64_t*));
SAME_TYPE(react_go_leader_key, int (*)(uint64_t, int, uint8_t*, size_t, int, double, char*, char*));
SAME_TYPE(react_go_leader_exchange, int (*)(uint64_t, int64_t*, size_t, double*, size_t));
SAME_TYPE(react_go_leader_decisions, int (*)(uint64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_leader_reset, int (*)(uint64_t, int));
SAME_TYPE(react_go_leader_report, int (*)(uint64_t, int64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_leader_close, int (*)(uint64_t));

// ---- per-thread last error ----------------------------------------------

static __thread char err_msg[REACT_ERROR_MAX];
static __thread int err_set;

HIDDEN void react__set_error(const char* msg, size_t n) {
    if (n > REACT_ERROR_MAX - 1) n = REACT_ERROR_MAX - 1;
    memcpy(err_msg, msg, n);
    err_msg[n] = 0;
    err_set = 1;
}

int react_last_error(char* buf, size_t cap) {
    if (buf == NULL || cap == 0) return REACT_E_ARG;
    size_t n = err_set ? strlen(err_msg) : 0;
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(buf, err_msg, k);
    buf[k] = 0;
    if (!err_set) return REACT_NONE;
    return k < n ? REACT_E_SHORT : REACT_OK;
}

// ---- fork guard ------------------------------------------------------------

static volatile sig_atomic_t forked;

static void on_fork_child(void) { forked = 1; }

__attribute__((constructor)) static void register_fork_guard(void) {
    pthread_atfork(NULL, NULL, on_fork_child);
}

static int refuse_fork(const char* fn) {
    static const char tail[] =
        ": called in a forked child of the process that loaded libreact; "
        "Go cannot run after fork, use the library in the parent or exec a fresh process";
    size_t n = strlen(fn);
    if (n + sizeof tail > REACT_ERROR_MAX) n = REACT_ERROR_MAX - sizeof tail;
    memcpy(err_msg, fn, n);
    memcpy(err_msg + n, tail, sizeof tail);
    err_set = 1;
    return REACT_E_FORK;
}

#define GUARD()                                      \
    do {                                             \
        if (forked) return refuse_fork(__func__);    \
    } while (0)

// ---- forwarding --------------------------------------------------------------

int react_abi_version(void) {
    GUARD();
    return react_go_abi_version();
}

int react_init(int log_level, const char* log_path, int gomaxprocs) {
    GUARD();
    return react_go_init(log_level, (char*)log_path, gomaxprocs);
}

int react_pattern_generate(const char* op, const char* algo, int ranks, int root,
                           uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_pattern_generate((char*)op, (char*)algo, ranks, root, buf, cap, len);
}

int react_pattern_layout(const uint8_t* pattern, size_t plen, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_pattern_layout((uint8_t*)pattern, plen, buf, cap, len);
}

int react_pattern_plan(const uint8_t* pattern, size_t plen, int rank, int64_t numel,
                       int itemsize, int64_t segment_bytes, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_pattern_plan((uint8_t*)pattern, plen, rank, numel, itemsize, segment_bytes, buf, cap, len);
}

int react_tuner_settings(uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_tuner_settings(buf, cap, len);
}

int react_tuner_create(const uint8_t* pattern, size_t len, double message_bytes,
                       const char* config_json, uint64_t* handle) {
    GUARD();
    return react_go_tuner_create((uint8_t*)pattern, len, message_bytes, (char*)config_json, handle);
}

int react_tuner_close(uint64_t h) {
    GUARD();
    return react_go_tuner_close(h);
}

int react_tuner_submit(uint64_t h, const uint8_t* batch, size_t len) {
    GUARD();
    return react_go_tuner_submit(h, (uint8_t*)batch, len);
}

int react_tuner_decision(uint64_t h, int64_t* version, int64_t* effective_epoch,
                         uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_tuner_decision(h, version, effective_epoch, buf, cap, len);
}

int react_tuner_report(uint64_t h, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_tuner_report(h, buf, cap, len);
}

int react_leader_create(uint64_t* handle) {
    GUARD();
    return react_go_leader_create(handle);
}

int react_leader_key(uint64_t h, int key, const uint8_t* pattern, size_t plen, int version,
                     double message_bytes, const char* config_json, const char* log_path) {
    GUARD();
    return react_go_leader_key(h, key, (uint8_t*)pattern, plen, version, message_bytes, (char*)config_json, (char*)log_path);
}

int react_leader_exchange(uint64_t h, const int64_t* layout, size_t nlayout, const double* values, size_t nvalues) {
    GUARD();
    return react_go_leader_exchange(h, (int64_t*)layout, nlayout, (double*)values, nvalues);
}

int react_leader_decisions(uint64_t h, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_leader_decisions(h, buf, cap, len);
}

int react_leader_reset(uint64_t h, int key) {
    GUARD();
    return react_go_leader_reset(h, key);
}

int react_leader_report(uint64_t h, int64_t exchange, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_leader_report(h, exchange, buf, cap, len);
}

int react_leader_close(uint64_t h) {
    GUARD();
    return react_go_leader_close(h);
}
