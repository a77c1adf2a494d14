/*
 * react.h: the C ABI of libreact.so, REACT's Go core (collective patterns,
 * the exactly-once checker, the tuner) behind plain C calls.
 *
 * This file is the contract. The header the Go toolchain writes next to the
 * library (build/libreact.h) is an implementation detail; do not include it.
 * docs/abi.md walks through this contract with an example.
 *
 * Conventions, for every function below:
 *  - Status: every function returns an int. REACT_OK (0) is success,
 *    REACT_NONE (1) "nothing to report" where a function says so, and a
 *    negative REACT_E_* code is failure. After a failure, react_last_error
 *    gives a sentence naming what was wrong, for the calling thread.
 *  - Buffers: the caller owns every buffer. Inputs are read during the call
 *    only; outputs are written only up to the capacity given. The library
 *    never hands out memory of its own and there is nothing to free.
 *  - Variable-size output (patterns): pass buf, cap and len. If buf is NULL
 *    or cap is too small, the call returns REACT_E_SHORT and sets *len to the
 *    size needed; call again with a buffer of at least that size.
 *  - NULL where a pointer is required gives REACT_E_ARG.
 *  - Handles: a tuner is a uint64_t handle (a Go runtime/cgo.Handle). A
 *    handle that was never made, or was closed, gives REACT_E_HANDLE; closing
 *    twice is an error, not a crash. Handle values are not reused.
 *  - Threads: every function may be called from any thread, concurrently.
 *    Calls on one tuner are served in order.
 *  - Fork: a forked child of a process that loaded the library cannot run
 *    Go code. Every function except react_last_error returns REACT_E_FORK in
 *    a forked child without entering Go. Load the library in the child
 *    afresh (exec) if it needs one.
 *  - Never dlclose the library (Go cannot be unloaded); close tuners
 *    instead. Load it after torch in Python (signal handlers); it installs
 *    no signal handlers of its own beyond the Go runtime's.
 *  - One Go runtime per process: do not load another Go-built shared
 *    library into the same process.
 */
#ifndef REACT_H
#define REACT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version react_abi_version returns; bumped on any incompatible
 * change to this file. */
#define REACT_ABI_VERSION 8

/* ---- Status codes ---------------------------------------------------- */
#define REACT_OK 0
#define REACT_NONE 1             /* no new decision / no error recorded */
#define REACT_E_ARG (-1)         /* NULL pointer or argument out of range */
#define REACT_E_INVALID (-2)     /* malformed input: msgpack, JSON config, a batch that does not fit the pattern */
#define REACT_E_SHORT (-3)       /* output buffer NULL or too small; *len = size needed */
#define REACT_E_SEMANTICS (-4)   /* pattern well formed but not exactly-once correct */
#define REACT_E_HANDLE (-5)      /* unknown, stale or closed tuner handle */
#define REACT_E_STATE (-6)       /* input does not fit the tuner's state: epoch order, pattern version */
/* -7 to -10 belonged to functions ABI 1 had (the FCT ring, CUDA timings);
 * they are not reused. */
#define REACT_E_FORK (-11)       /* called in a forked child: refused */
#define REACT_E_PANIC (-12)      /* internal error, caught; please report the message */
#define REACT_E_LIMIT (-13)      /* a pattern past a size limit: more than REACT_MAX_RANKS ranks or REACT_MAX_STEPS steps */

/* Size limits of a pattern (Go's ten.MaxRanks and ten.MaxSteps), shared by
 * the generator, the checker and the decoder: they bound what any input can
 * make the library allocate (the checker keeps N x N bits). Chunk ids must
 * also lie below the flow count. Past them: REACT_E_LIMIT. */
#define REACT_MAX_RANKS 1024
#define REACT_MAX_STEPS 4096

/* Longest message react_last_error holds, with the terminating NUL: a
 * buffer this large never truncates. */
#define REACT_ERROR_MAX 1024

/* ---- Library ----------------------------------------------------------- */

/* Returns REACT_ABI_VERSION of the library (> 0); compare it with the
 * REACT_ABI_VERSION you compiled against. */
int react_abi_version(void);

/* Log levels for react_init: JSON lines, one per event. */
#define REACT_LOG_DEBUG (-1)
#define REACT_LOG_INFO 0
#define REACT_LOG_WARN 1
#define REACT_LOG_ERROR 2
#define REACT_LOG_OFF 6

/* Sets up logging and the Go scheduler. Optional: without it nothing is
 * logged and GOMAXPROCS keeps its default (all CPUs).
 *  log_level   REACT_LOG_*; lines below it are dropped.
 *  log_path    file to append to; NULL or "" for stderr.
 *  gomaxprocs  Go's GOMAXPROCS for this process, > 0; 0 leaves it. Give each
 *              rank of a multi-rank host its share of the cores.
 * Every line carries "pid", "rank" (the RANK environment variable, -1
 * without) and, for tuner events, "handle", "label" and "version" (the
 * pattern version in force). Calling it again replaces the logger for
 * tuners created afterwards. */
int react_init(int log_level, const char* log_path, int gomaxprocs);

/* Copies the message of the calling thread's last failed call into buf
 * (NUL-terminated, truncated to cap-1 bytes). Returns REACT_OK, REACT_NONE
 * when this thread has seen no failure (buf gets ""), REACT_E_SHORT when
 * the message was truncated, REACT_E_ARG when buf is NULL or cap is 0.
 * Successful calls leave the message alone, as with errno. Plain C: safe in
 * a forked child too. */
int react_last_error(char* buf, size_t cap);

/* ---- Patterns -----------------------------------------------------------
 * A pattern travels as msgpack bytes, layout in docs/abi.md (the columns
 * chunk, step, src, dst, kind, fraction). */

/* Generates a pattern.
 *  op    "allreduce" | "allgather" | "reducescatter" | "broadcast" | "reduce"
 *  algo  "tree" | "ring" | "halving_doubling" | "recursive_doubling" (what op allows)
 *  ranks number of ranks, 2 to REACT_MAX_RANKS
 *  root  root rank for broadcast and reduce, -1 otherwise
 * Output by the buffer protocol. REACT_E_ARG for an unknown op or algo or
 * ranks/root out of range, REACT_E_LIMIT for more than REACT_MAX_RANKS. */
int react_pattern_generate(const char* op, const char* algo, int ranks, int root,
                           uint8_t* buf, size_t cap, size_t* len);

/* Checks a pattern and says where its data goes. The check comes first:
 * REACT_E_INVALID when the bytes or the structure are malformed (sizes that
 * the bytes do not hold included: nothing is allocated from a claimed
 * size); REACT_E_LIMIT past REACT_MAX_RANKS or REACT_MAX_STEPS;
 * REACT_E_SEMANTICS when some rank would miss or double-count a
 * contribution (react_last_error names op, chunk, rank and flow). Run no
 * pattern this refuses.
 * The layout is the msgpack map "react.layout/v1" with <i4 columns "start"
 * (F+1), "blocks" and "owner" (one per chunk). For allgather, flow f
 * carries blocks[start[f]:start[f+1]] (origin ranks, ascending); for
 * reducescatter, owner[c] is the rank where chunk c completes (-1 for other
 * ops). "pred_start" (F+1) and "preds": flow f waits for the flows
 * preds[pred_start[f]:pred_start[f+1]] (its chunk's flows into its source
 * at earlier steps) to arrive and be applied at its source. An executor
 * places and orders data by these, never by guessing from the algorithm.
 * "exchange_row" (an integer): the float64 values one epoch of the pattern
 * takes in the control plane's exchange (flows, elapsed, one per rank).
 * Output by the buffer protocol. */
int react_pattern_layout(const uint8_t* pattern, size_t plen,
                         uint8_t* buf, size_t cap, size_t* len);

/* One rank's execution plan of a pattern for a call of numel elements of
 * itemsize bytes, its messages cut into segments of about segment_bytes
 * (0: one segment a message). The pattern is checked first, as by
 * react_pattern_layout, with its status codes; REACT_E_ARG for rank out of
 * range, numel < 0, itemsize <= 0 or segment_bytes < 0.
 * The plan is the msgpack map "react.plan/v1" (docs/abi.md): the messages
 * the rank sends and receives in step order (flows of one step between one
 * pair of ranks travel as one), the element ranges of the working buffer
 * each carries, the receives each send waits for, and the order in which
 * receives may be applied. An executor runs it as it is.
 * Output by the buffer protocol. */
int react_pattern_plan(const uint8_t* pattern, size_t plen, int rank, int64_t numel,
                       int itemsize, int64_t segment_bytes, uint8_t* buf, size_t cap, size_t* len);

/* ---- Settings ---------------------------------------------------------- */

/* Every setting a user of react_torch sets, so that a caller reads them
 * without copying their names, variables or defaults: a JSON array with one
 * object per setting,
 *   {"name": "KtGrowth", "var": "REACT_KT_GROWTH", "type": "int",
 *    "default": 5, "help": "...", "tuner": true, "shared": false}
 * where type is int, float, string or bool; a setting with "tuner" true is
 * one config_json takes by its name, the others are the runtime's; "shared"
 * says every rank of a group must have the same value.
 * Output by the buffer protocol. */
int react_settings(uint8_t* buf, size_t cap, size_t* len);

/* What keeps the ranks of a group of size from running together, given
 * every rank's settings as set (every_json: a JSON array, one object per
 * rank in rank order, by the settings' names; those not in it keep their
 * defaults): the ranks' problems, each naming a setting's variable and its
 * value (the tuner's count only when "tune" is true and size > 1), else
 * the settings react_settings marks "shared" that differ, each with its
 * values and ranks, in one sentence; empty (*len 0) when nothing does.
 * Output by the buffer protocol; REACT_E_INVALID when every_json is not an
 * array of objects, REACT_E_ARG when it has not size of them. */
int react_settings_agree(const char* every_json, int size, uint8_t* buf, size_t cap, size_t* len);

/* The settings an environment sets (env_json: a JSON object of its
 * variables, name to value), so that a caller parses none of them:
 *   {"values": {"Lag": 3, ...}, "unknown": ["REACT_APP_X"],
 *    "problems": ["REACT_LAG=\"soon\" is not a valid int for Lag"],
 *    "init": {"log_level": REACT_LOG_*, "log_path": "", "gomaxprocs": 1}}
 * values by the settings' names, of their types; unknown, the REACT_
 * variables that name no setting (the prefix is not react_torch's alone);
 * problems, one sentence a value not of its type; init, react_init's
 * arguments, or "init_error" in its place where one of their variables is
 * wrong. check_calls is on with TORCH_DISTRIBUTED_DEBUG=DETAIL unless
 * REACT_CHECK_CALLS is set. Needs no react_init. Output by the buffer
 * protocol; REACT_E_ARG when env_json is not an object of strings. */
int react_settings_env(const char* env_json, uint8_t* buf, size_t cap, size_t* len);

/* A group's ranks by host, from the identity each rank found for its host
 * (ids_json: a JSON array of strings in rank order), under hosts mode mode
 * (REACT_HOSTS: auto, flat or hier):
 *   {"hosts": [[0, 1], [2, 3]], "host_of": [0, 0, 1, 1],
 *    "local_of": [0, 1, 0, 1], "rails": 2, "hier": true,
 *    "text": "2 host(s) x 2 rank(s)"}
 * hosts ordered by their lowest rank, each host's ranks in rank order;
 * rails, the fewest ranks a host; hier, whether the group runs its
 * patterns over hosts (auto: where it spans several hosts and one runs
 * several of its ranks). Output by the buffer protocol; REACT_E_ARG for
 * no ids or an unknown mode. */
int react_hosts_layout(const char* ids_json, const char* mode, uint8_t* buf, size_t cap, size_t* len);

/* ---- Call signatures -------------------------------------------------- */

/* The signature of a collective call, which every rank of a group must make
 * alike: sig receives REACT_CALL_FIELDS values (the call's number on the
 * group, op, dtype, element count, root, reduce op, its key's epoch and
 * pattern version), numbers that mean the same on every rank; salt the
 * REACT_CALL_SALT_BITS of its hash that its messages' tags carry; digest
 * 62 bits of the hash (>= 0; equal digests: equal calls). op is a pattern
 * op or "barrier"; reduce is "" or sum, avg, product, min, max, band, bor,
 * bxor; dtype is torch's name without "torch.". REACT_E_ARG for an op or
 * reduce op it does not know. */
#define REACT_CALL_FIELDS 8
#define REACT_CALL_SALT_BITS 20
int react_call_sign(int64_t seq, const char* op, const char* dtype, int64_t numel, int64_t root, const char* reduce,
                    int64_t epoch, int64_t version, int64_t* sig, uint32_t* salt, int64_t* digest);

/* The sentence that names the calls n ranks (ranks[i], distinct, of a group
 * of size) made, signature i at sigs[i * REACT_CALL_FIELDS]: the ranks
 * grouped by call, "ranks 0, 1: allreduce (sum) of 1000 float32, call 5 on
 * the group, ...; rank 2: ...". Output by the buffer protocol. */
int react_call_sentence(const int64_t* sigs, const int* ranks, int n, int size, uint8_t* buf, size_t cap, size_t* len);

/* ---- Tuners ------------------------------------------------------------ */

/* Creates a tuner for one recurring collective.
 *  pattern, len   the initial pattern (msgpack); it must pass the check
 *  message_bytes  size of the collective's message buffer, > 0
 *  config_json    NULL for the defaults, or a JSON object setting any of
 *                 the settings react_settings marks "tuner" (exactly so
 *                 spelled), Stepped and OneHost (what the runtime says of
 *                 each collective: tuner.Config) and "label" (a string for
 *                 the logs). An unknown
 *                 key or a value of the wrong type is refused
 *                 (REACT_E_INVALID); out-of-range values give REACT_E_ARG.
 *  handle         receives the new handle
 * Patterns it emits count versions from 0 (the initial pattern). */
int react_tuner_create(const uint8_t* pattern, size_t len, double message_bytes,
                       const char* config_json, uint64_t* handle);

/* Frees the tuner and its handle, once a react_tuner_submit in progress on
 * it has returned. */
int react_tuner_close(uint64_t h);

/* Runs the tuner over one FCT batch (msgpack "react.fcts/v1", docs/abi.md)
 * on the calling thread; when the batch completed a tuner batch of B
 * epochs, the decision is ready on return. All epochs of a batch ran one
 * pattern version: split batches where the runtime switched. Epochs that
 * ran the pattern in force at or past a decided switch's effective epoch
 * defer the switch to the epoch after them (the runtime switched later).
 * REACT_E_INVALID for malformed bytes or a flow count that does not fit;
 * REACT_E_STATE for epochs not after the last one taken, or a version
 * other than the one in force. A refused batch leaves the tuner as it was.
 * REACT_E_PANIC when the tuner failed; it then refuses every later batch
 * with the same message. */
int react_tuner_submit(uint64_t h, const uint8_t* batch, size_t len);

/* Fetches the newest pattern the tuner emitted and has not handed out yet.
 * REACT_NONE (*len = 0) when there is none. Otherwise sets *version (its
 * version) and *effective_epoch (the first epoch every rank must run it)
 * and writes the pattern by the buffer protocol; on REACT_E_SHORT the
 * decision stays pending for the retry. Each version is handed out once.
 * Never waits for a react_tuner_submit in progress. */
int react_tuner_decision(uint64_t h, int64_t* version, int64_t* effective_epoch,
                         uint8_t* buf, size_t cap, size_t* len);

/* What the tuner knows now, as a JSON object (pkg/tuner.Report, docs/tuner.md):
 * the links the link model gives competing flows, most first, each with its
 * standard error, significance and "ambiguous_with" (the links the flows
 * seen cannot tell it apart from); slow pairs; the last batch's collective
 * time (mean, p95); every change with its predicted and measured speed-up
 * and verdict. Output by the buffer protocol; the bytes stay the same until
 * the tuner takes another epoch, so a retry after REACT_E_SHORT fits. Waits
 * for a react_tuner_submit in progress; costs a few replays of the held
 * epochs per loaded link. */
int react_tuner_report(uint64_t h, uint8_t* buf, size_t cap, size_t* len);

/* ---- A rank's control plane ----------------------------------------------
 * One rank's side of a group's control plane (internal/control; docs/abi.md):
 * per key the epoch and the pattern version in force, the records of the
 * epochs run, when an exchange with the leader is due and what it carries,
 * the answers and the epochs their switches take effect at. The caller
 * moves the bytes between ranks (the rows to the leader by a MAX reduction,
 * the answer from it by a broadcast, the vote by a MIN allreduce) and does
 * the waiting; every rule lives here. On a tuned group's leader the handle
 * also holds every key's tuner, which take the exchanges on a thread of
 * their own and write the FCT logs. Calls on one handle run one at a time. */

/* config_json: {"batch": B, "min_calls": M, "tuned": bool,
 * "leader": bool}; REACT_E_INVALID names an unknown or bad field. */
int react_control_create(const char* config_json, uint64_t* handle);

/* Adds the next key (ids count from 0 in call order: the same on every
 * rank), whose calls move numel elements of itemsize bytes with the checked
 * pattern. config_json: the tuner's settings as for react_tuner_create,
 * "label" and "key" (a JSON value naming the key in reports); the leader
 * makes the key's tuner with them. fct_log: on the leader, the base of
 * the key's FCT log (REACT_FCT_LOG): BASE.OP.DTYPE.NUMEL[.rootR].jsonl is
 * created, named from "key" ([op, dtype, numel, root]; another form is
 * REACT_E_INVALID); "" or NULL: none. */
int react_control_key(uint64_t h, const uint8_t* pattern, size_t plen, int64_t numel, int itemsize,
                      const char* config_json, const char* fct_log, int* id);

/* Starts key id's next epoch: its number and the pattern version in force
 * (a switch that is due happens here). */
int react_control_begin(uint64_t h, int id, int64_t* epoch, int64_t* version);

/* The msgpack form of key id's pattern version (every version it ran or has
 * scheduled). Output by the buffer protocol. */
int react_control_pattern(uint64_t h, int id, int64_t version, uint8_t* buf, size_t cap, size_t* len);

/* Ends the epoch begun: this rank's arrivals of the n flows it received
 * (indices in the pattern; seconds from its entry), the call's time, its
 * rank in the pattern and its entry time on its own clock (entry -1: it ran
 * no part). deferred != 0: the arrivals come later (react_control_fill).
 * due[5]: recorded (0/1), the exchange due now (0: none), the answer
 * that must be in before it is sent (< 1: none), the key's next epoch and
 * whether its next react_control_begin may switch (0/1: a switch is
 * scheduled). Where it may not and no exchange was sent since, the next
 * epoch runs the version in force and begin can be skipped. REACT_E_INVALID for a
 * flow out of range or a time that is negative or not finite (the epoch
 * still counts). */
int react_control_end(uint64_t h, int id, const int64_t* flows, const double* arrivals, size_t n,
                      double elapsed, int entry, double entry_at, int deferred, int64_t* due);

/* Sends the exchange react_control_end found due, at the caller's time at
 * (seconds, one monotonic clock): out[2] = the exchange and how many of its
 * records wait for react_control_fill. REACT_E_STATE if the answer it needs
 * is not in. */
int react_control_send(uint64_t h, double at, int64_t* out);

/* Gives deferred record i of exchange x its arrivals and time. */
int react_control_fill(uint64_t h, int64_t x, int64_t i, const int64_t* flows, const double* arrivals, size_t n,
                       double elapsed);

/* This rank's row of exchange x: float64 values (-Inf where it has none),
 * its last a request for the leader's report. Output by the buffer
 * protocol, counted in values. */
int react_control_row(uint64_t h, int64_t x, double* buf, size_t cap, size_t* len);

/* The leader: the rows of exchange x reduced by MAX go to the tuners. */
int react_control_take(uint64_t h, int64_t x, const double* values, size_t n);

/* The leader: its answer to exchange x (wire.Answer), once the tuners took
 * x or at the latest half the time between exchanges after x was sent
 * (now: the caller's time, on send's clock). Output by the buffer
 * protocol; a retry gets the same bytes. REACT_E_INVALID if a tuner failed. */
int react_control_answer(uint64_t h, int64_t x, double now, uint8_t* buf, size_t cap, size_t* len);

/* Reads the answer to exchange x and checks every pattern it carries
 * (the exactly-once check): ok[i] = 1 where this rank accepts decision i.
 * *len = the decisions; REACT_E_SHORT when cap is smaller. REACT_E_INVALID
 * for a malformed answer. */
int react_control_check(uint64_t h, int64_t x, const uint8_t* body, size_t n, int64_t* ok, size_t cap, size_t* len);

/* Takes the vote on exchange x's decisions (votes[i]: every rank accepted
 * decision i; the MIN over the ranks of react_control_check's ok). result[2]
 * = the decisions refused and whether to estimate the group clock again
 * now; buf gets the refusals as JSON [{"key", "version", "why"}] by the
 * buffer protocol (a retry for the same x gets the same). On the leader a
 * refused key's tuner restarts from the pattern in force. */
int react_control_accept(uint64_t h, int64_t x, const int64_t* votes, size_t n, int64_t* result,
                         uint8_t* buf, size_t cap, size_t* len);

/* The last report the leader sent (JSON; empty before one); ask != 0 asks
 * for a newer one with this rank's next exchange. Buffer protocol. */
int react_control_report(uint64_t h, int ask, uint8_t* buf, size_t cap, size_t* len);

/* What turns this rank's clock into the group's (added to entry times). */
int react_control_offset(uint64_t h, double offset);

/* {"exchanges": answers accepted, "depth": exchanges in flight before a
 * rank waits, "keys": [{"epoch", "version", "switches", "refused", "tuned"}]}
 * by key id. Buffer protocol. */
int react_control_stats(uint64_t h, uint8_t* buf, size_t cap, size_t* len);

/* Stops the tuners (after the exchanges they were given), closes the logs
 * and the handle. */
int react_control_close(uint64_t h);

#ifdef __cplusplus
}
#endif
#endif /* REACT_H */
