/*
 * bench_capi.c: what libreact costs a C caller.
 *  1. one exported call (react_abi_version, which enters Go) in ns, beside
 *     react_last_error (plain C in the library) for the floor;
 *  2. one FCT batch of 6 epochs of an 8-rank pattern with a slow rank, from
 *     react_tuner_submit to the new pattern in hand (react_tuner_decision);
 *     the target is under 1 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "react.h"

#define MSG 1048576.0

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static uint8_t* generate(const char* algo, int ranks, size_t* len) {
    react_pattern_generate("allreduce", algo, ranks, -1, NULL, 0, len);
    uint8_t* b = malloc(*len);
    if (react_pattern_generate("allreduce", algo, ranks, -1, b, *len, len) != REACT_OK) exit(2);
    return b;
}

static void die(const char* what, int st) {
    char e[REACT_ERROR_MAX];
    react_last_error(e, sizeof e);
    fprintf(stderr, "bench: %s: status %d: %s\n", what, st, e);
    exit(2);
}

static void bench_call(void) {
    const int n = 2000000;
    volatile int sink = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++) sink += react_abi_version();
    double go = (now_s() - t0) / n * 1e9;
    char e[64];
    t0 = now_s();
    for (int i = 0; i < n; i++) sink += react_last_error(e, sizeof e);
    double c = (now_s() - t0) / n * 1e9;
    printf("call overhead: react_abi_version (C -> Go -> C) %.1f ns/call; react_last_error (C only) %.1f ns/call\n", go, c);
    (void)sink;
}

/* model "paper" must propose under the synthetic slow rank; "react" judges
 * these degree-law FCTs with its link model and may rightly keep the
 * pattern, so its line reports the time either way. */
static void bench_decision(const char* algo, int slow, const char* model) {
    size_t plen;
    uint8_t* pat = generate(algo, 8, &plen);
    pattern_view v;
    read_pattern(pat, plen, &v);
    uint64_t h;
    char cfg[64];
    snprintf(cfg, sizeof cfg, "{\"Model\": \"%s\"}", model);
    int st;
    double* fct = malloc(sizeof(double) * 6 * v.nflows);
    double el[6];
    synth_fcts(&v, MSG, 0, 6, slow, fct, el);
    mp_buf m = {0};
    mp_batch(&m, 0, 0, 6, (uint32_t)v.nflows, fct, el);
    /* the link model's decision climbs over every candidate: fewer rounds */
    const int iters = strcmp(model, "paper") == 0 ? 400 : 40;
    static double t[400];
    uint8_t* out = malloc(1 << 20);
    for (int i = 0; i < iters + 20; i++) {
        /* a fresh tuner each round, made before the clock starts */
        if ((st = react_tuner_create(pat, plen, MSG, cfg, &h))) die("create", st);
        int64_t ver, eff;
        size_t len;
        double t0 = now_s();
        if ((st = react_tuner_submit(h, m.b, m.n))) die("submit", st);
        st = react_tuner_decision(h, &ver, &eff, out, 1 << 20, &len);
        double dt = now_s() - t0;
        if (slow >= 0 && st != REACT_OK && strcmp(model, "paper") == 0) die("decision (expected a new pattern)", st);
        if (i >= 20) t[i - 20] = dt; /* the first ones warm up */
        react_tuner_close(h);
    }
    qsort(t, iters, sizeof t[0], cmp_double);
    double med = t[iters / 2] * 1e6, p90 = t[iters * 9 / 10] * 1e6, mx = t[iters - 1] * 1e6;
    printf("submit -> decision (%s): allreduce %s, 8 ranks, %lld flows, 6 epochs (%zu bytes), %s: median %.0f us, p90 %.0f us, max %.0f us (target < 1000 us: %s)\n",
           model, algo, (long long)v.nflows, m.n, slow >= 0 ? "rank 3 slow" : "no congestion, no change", med, p90,
           mx, med < 1000 ? "met" : "MISSED");
    free(out);
    free(fct);
    free(m.b);
    free(pat);
}

int main(void) {
    int st = react_init(REACT_LOG_OFF, NULL, 0);
    if (st) die("init", st);
    bench_call();
    bench_decision("tree", 3, "paper");
    bench_decision("ring", 3, "paper");
    bench_decision("halving_doubling", 3, "paper");
    bench_decision("ring", -1, "paper");
    bench_decision("tree", 3, "react");
    bench_decision("ring", -1, "react");
    return 0;
}
