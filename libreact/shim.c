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
SAME_TYPE(react_go_settings, int (*)(uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_settings_agree, int (*)(char*, int, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_settings_env, int (*)(char*, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_hosts_layout, int (*)(char*, char*, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_call_sign, int (*)(int64_t, char*, char*, int64_t, int64_t, char*, int64_t, int64_t, int64_t*, uint32_t*, int64_t*));
SAME_TYPE(react_go_call_sentence, int (*)(int64_t*, int*, int, int, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_tuner_create, int (*)(uint8_t*, size_t, double, char*, uint64_t*));
SAME_TYPE(react_go_tuner_close, int (*)(uint64_t));
SAME_TYPE(react_go_tuner_submit, int (*)(uint64_t, uint8_t*, size_t));
SAME_TYPE(react_go_tuner_decision, int (*)(uint64_t, int64_t*, int64_t*, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_tuner_report, int (*)(uint64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_control_create, int (*)(char*, uint64_t*));
SAME_TYPE(react_go_control_key, int (*)(uint64_t, uint8_t*, size_t, int64_t, int, char*, char*, int*));
SAME_TYPE(react_go_control_begin, int (*)(uint64_t, int, int64_t*, int64_t*));
SAME_TYPE(react_go_control_pattern, int (*)(uint64_t, int, int64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_control_end, int (*)(uint64_t, int, int64_t*, double*, size_t, double, int, double, int, int64_t*));
SAME_TYPE(react_go_control_send, int (*)(uint64_t, double, int64_t*));
SAME_TYPE(react_go_control_fill, int (*)(uint64_t, int64_t, int64_t, int64_t*, double*, size_t, double));
SAME_TYPE(react_go_control_row, int (*)(uint64_t, int64_t, double*, size_t, size_t*));
SAME_TYPE(react_go_control_take, int (*)(uint64_t, int64_t, double*, size_t));
SAME_TYPE(react_go_control_answer, int (*)(uint64_t, int64_t, double, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_control_check, int (*)(uint64_t, int64_t, uint8_t*, size_t, int64_t*, size_t, size_t*));
SAME_TYPE(react_go_control_accept, int (*)(uint64_t, int64_t, int64_t*, size_t, int64_t*, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_control_report, int (*)(uint64_t, int, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_control_offset, int (*)(uint64_t, double));
SAME_TYPE(react_go_control_stats, int (*)(uint64_t, uint8_t*, size_t, size_t*));
SAME_TYPE(react_go_control_close, int (*)(uint64_t));

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

int react_settings(uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_settings(buf, cap, len);
}

int react_settings_agree(const char* every_json, int size, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_settings_agree((char*)every_json, size, buf, cap, len);
}

int react_settings_env(const char* env_json, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_settings_env((char*)env_json, buf, cap, len);
}

int react_hosts_layout(const char* ids_json, const char* mode, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_hosts_layout((char*)ids_json, (char*)mode, buf, cap, len);
}

int react_call_sign(int64_t seq, const char* op, const char* dtype, int64_t numel, int64_t root, const char* reduce,
                    int64_t epoch, int64_t version, int64_t* sig, uint32_t* salt, int64_t* digest) {
    GUARD();
    return react_go_call_sign(seq, (char*)op, (char*)dtype, numel, root, (char*)reduce, epoch, version, sig, salt, digest);
}

int react_call_sentence(const int64_t* sigs, const int* ranks, int n, int size, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_call_sentence((int64_t*)sigs, (int*)ranks, n, size, buf, cap, len);
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

int react_control_create(const char* config_json, uint64_t* handle) {
    GUARD();
    return react_go_control_create((char*)config_json, handle);
}

int react_control_key(uint64_t h, const uint8_t* pattern, size_t plen, int64_t numel, int itemsize,
                      const char* config_json, const char* log_path, int* id) {
    GUARD();
    return react_go_control_key(h, (uint8_t*)pattern, plen, numel, itemsize, (char*)config_json, (char*)log_path, id);
}

int react_control_begin(uint64_t h, int id, int64_t* epoch, int64_t* version) {
    GUARD();
    return react_go_control_begin(h, id, epoch, version);
}

int react_control_pattern(uint64_t h, int id, int64_t version, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_pattern(h, id, version, buf, cap, len);
}

int react_control_end(uint64_t h, int id, const int64_t* flows, const double* arrivals, size_t n,
                      double elapsed, int entry, double entry_at, int deferred, int64_t* due) {
    GUARD();
    return react_go_control_end(h, id, (int64_t*)flows, (double*)arrivals, n, elapsed, entry, entry_at, deferred, due);
}

int react_control_send(uint64_t h, double at, int64_t* out) {
    GUARD();
    return react_go_control_send(h, at, out);
}

int react_control_fill(uint64_t h, int64_t x, int64_t i, const int64_t* flows, const double* arrivals, size_t n,
                       double elapsed) {
    GUARD();
    return react_go_control_fill(h, x, i, (int64_t*)flows, (double*)arrivals, n, elapsed);
}

int react_control_row(uint64_t h, int64_t x, double* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_row(h, x, buf, cap, len);
}

int react_control_take(uint64_t h, int64_t x, const double* values, size_t n) {
    GUARD();
    return react_go_control_take(h, x, (double*)values, n);
}

int react_control_answer(uint64_t h, int64_t x, double now, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_answer(h, x, now, buf, cap, len);
}

int react_control_check(uint64_t h, int64_t x, const uint8_t* body, size_t n, int64_t* ok, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_check(h, x, (uint8_t*)body, n, ok, cap, len);
}

int react_control_accept(uint64_t h, int64_t x, const int64_t* votes, size_t n, int64_t* result,
                         uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_accept(h, x, (int64_t*)votes, n, result, buf, cap, len);
}

int react_control_report(uint64_t h, int ask, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_report(h, ask, buf, cap, len);
}

int react_control_offset(uint64_t h, double offset) {
    GUARD();
    return react_go_control_offset(h, offset);
}

int react_control_stats(uint64_t h, uint8_t* buf, size_t cap, size_t* len) {
    GUARD();
    return react_go_control_stats(h, buf, cap, len);
}

int react_control_close(uint64_t h) {
    GUARD();
    return react_go_control_close(h);
}
