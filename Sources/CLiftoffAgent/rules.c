// Thread rules in a program that does not link Liftoff (`liftoff profile --rules`, or `--rule
// NAME=POLICY`): with LIFTOFF_AGENT_RULES=1 (every rule, recorded) or `rule=policy,…` (record, log
// or trap) the agent arms the sampler library's blocking-call checks (blocking.c) from
// its start, and keeps each call the program's main thread made to the C library's file, socket,
// name-lookup, sleep and wait functions with its stack from the program's caller on, one entry per rule and call site, its repeats counted. The
// recording carries them as lines (lo_agent_violations_text); `liftoff` names the rules and
// symbolizes the stacks. The checks stop before the agent writes its recording, and when it stands
// down for a program that links Liftoff (whose own rules apply).

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lo_sampler.h"
#include "rules.h"

#define LO_RULES_ENV "LIFTOFF_AGENT_RULES"
#define LO_RULES_SITES 64
#define LO_RULES_FRAMES 48
#define LO_RULES_SITE_FRAMES 6
#define LO_RULES_OPERATION 200

typedef struct lo_rule_site {
    int rule;
    uint64_t count;
    pid_t tid;
    uint64_t time_ns;
    int depth;
    uintptr_t frames[LO_RULES_FRAMES];
    char operation[LO_RULES_OPERATION];
} lo_rule_site;

static lo_rule_site sites[LO_RULES_SITES];
static _Atomic int site_count;
static atomic_flag sites_lock = ATOMIC_FLAG_INIT;
static _Atomic int armed;
static _Atomic uint64_t sites_dropped;

// Each rule's policy, by its LO_BLOCKING_ number: off, or what a call that breaks it does.
enum { LO_POLICY_OFF = 0, LO_POLICY_RECORD, LO_POLICY_LOG, LO_POLICY_TRAP };
static int policies[LO_BLOCKING_LOCK_WAIT + 1];

static void lock_sites(void) {
    while (atomic_flag_test_and_set_explicit(&sites_lock, memory_order_acquire)) {
    }
}

static void unlock_sites(void) { atomic_flag_clear_explicit(&sites_lock, memory_order_release); }

static int same_site(const lo_rule_site *site, int rule, const uintptr_t *frames, int depth) {
    if (site->rule != rule) return 0;
    int compared = depth < LO_RULES_SITE_FRAMES ? depth : LO_RULES_SITE_FRAMES;
    if ((site->depth < LO_RULES_SITE_FRAMES ? site->depth : LO_RULES_SITE_FRAMES) != compared) return 0;
    return memcmp(site->frames, frames, (size_t)compared * sizeof frames[0]) == 0;
}

static const char *rule_name(int rule);
static void append(char *buffer, size_t capacity, size_t *used, const char *text, size_t length);
static void record(int rule, const char *operation, uintptr_t caller);

// The reporter blocking.c calls on the thread that made the call (never in a signal handler).
static void report(int rule, const char *operation, uint64_t waited_ns, uintptr_t caller) {
    if (!atomic_load(&armed) || rule < 1 || rule > LO_BLOCKING_LOCK_WAIT || policies[rule] == LO_POLICY_OFF) return;
    (void)waited_ns;
    record(rule, operation, caller);
    if (policies[rule] == LO_POLICY_LOG || policies[rule] == LO_POLICY_TRAP) {
        // One line as the call is made: "liftoff: sleep-on-main: usleep(30000) on the main thread".
        char line[LO_RULES_OPERATION + 64];
        size_t used = 0;
        const char *name = rule_name(rule);
        append(line, sizeof line, &used, "liftoff: ", 9);
        append(line, sizeof line, &used, name, strlen(name));
        append(line, sizeof line, &used, ": ", 2);
        append(line, sizeof line, &used, operation, strlen(operation));
        append(line, sizeof line, &used, " on the main thread\n", 20);
        ssize_t ignored = write(2, line, used);
        (void)ignored;
    }
    // The recording is written by the agent's handler for the fatal signal, violation included.
    if (policies[rule] == LO_POLICY_TRAP) raise(SIGTRAP);
}

// Keeps the call: a new site, or one more call at a site seen before.
static void record(int rule, const char *operation, uintptr_t caller) {
    uintptr_t stack[LO_RULES_FRAMES + 16];
    int depth = lo_capture_current_stack(stack, LO_RULES_FRAMES + 16);
    // From the program's caller of the C library's function on.
    int start = 0;
    while (start < depth && stack[start] != caller) start++;
    if (start == depth) start = 0;
    uintptr_t *frames = stack + start;
    depth -= start;
    if (depth > LO_RULES_FRAMES) depth = LO_RULES_FRAMES;
    lock_sites();
    int count = atomic_load(&site_count);
    for (int i = 0; i < count; i++) {
        if (same_site(&sites[i], rule, frames, depth)) {
            sites[i].count++;
            unlock_sites();
            return;
        }
    }
    if (count == LO_RULES_SITES) {
        unlock_sites();
        atomic_fetch_add(&sites_dropped, 1);
        return;
    }
    lo_rule_site *site = &sites[count];
    site->rule = rule;
    site->count = 1;
    site->tid = lo_current_tid();
    site->time_ns = lo_monotonic_ns();
    site->depth = depth;
    memcpy(site->frames, frames, (size_t)depth * sizeof frames[0]);
    size_t length = strlen(operation);
    if (length >= LO_RULES_OPERATION) length = LO_RULES_OPERATION - 1;
    for (size_t i = 0; i < length; i++) {
        char c = operation[i];
        site->operation[i] = c == '\t' || c == '\n' ? ' ' : c;
    }
    site->operation[length] = 0;
    atomic_store(&site_count, count + 1);
    unlock_sites();
}

// Reads LIFTOFF_AGENT_RULES into `policies`; 0 when it names no rule.
static int read_policies(const char *value) {
    static const char *const names[] = {"", "disk-read-on-main", "disk-write-on-main", "network-on-main", "sleep-on-main", "lock-wait-on-main"};
    static const char *const words[] = {"", "record", "log", "trap"};
    if (strcmp(value, "1") == 0) {
        for (int rule = 1; rule <= LO_BLOCKING_LOCK_WAIT; rule++) policies[rule] = LO_POLICY_RECORD;
        return 1;
    }
    int any = 0;
    // "rule=policy,rule=policy": liftoff wrote it; anything else in it is ignored.
    for (const char *at = value; *at;) {
        const char *end = strchr(at, ',');
        size_t length = end ? (size_t)(end - at) : strlen(at);
        const char *equals = memchr(at, '=', length);
        size_t name_length = equals ? (size_t)(equals - at) : length;
        for (int rule = 1; rule <= LO_BLOCKING_LOCK_WAIT; rule++) {
            if (strlen(names[rule]) != name_length || strncmp(at, names[rule], name_length) != 0) continue;
            int policy = LO_POLICY_RECORD;
            for (int word = LO_POLICY_RECORD; word <= LO_POLICY_TRAP && equals; word++) {
                size_t word_length = length - name_length - 1;
                if (strlen(words[word]) == word_length && strncmp(equals + 1, words[word], word_length) == 0) policy = word;
            }
            policies[rule] = policy;
            any = 1;
        }
        at += length + (end ? 1 : 0);
    }
    return any;
}

void lo_agent_rules_begin(void) {
    const char *value = getenv(LO_RULES_ENV);
    if (value == NULL || !read_policies(value)) return;
    lo_blocking_set_reporter(report);
    int expected = 0;
    if (atomic_compare_exchange_strong(&armed, &expected, 1)) lo_blocking_arm(1);
}

void lo_agent_rules_after_fork(void) {
    atomic_store(&site_count, 0);
    atomic_store(&sites_dropped, 0);
    atomic_flag_clear(&sites_lock);
}

void lo_agent_rules_end(void) {
    int expected = 1;
    if (atomic_compare_exchange_strong(&armed, &expected, 0)) lo_blocking_arm(-1);
}

static const char *rule_name(int rule) {
    switch (rule) {
    case LO_BLOCKING_DISK_READ: return "disk-read-on-main";
    case LO_BLOCKING_DISK_WRITE: return "disk-write-on-main";
    case LO_BLOCKING_NETWORK: return "network-on-main";
    case LO_BLOCKING_LOCK_WAIT: return "lock-wait-on-main";
    default: return "sleep-on-main";
    }
}

// Appends `text` (length `length`) to `buffer` at `*used`, up to `capacity`.
static void append(char *buffer, size_t capacity, size_t *used, const char *text, size_t length) {
    if (*used >= capacity) return;
    if (length > capacity - *used) length = capacity - *used;
    memcpy(buffer + *used, text, length);
    *used += length;
}

// `value` in base 10 or 16.
static void append_number(char *buffer, size_t capacity, size_t *used, uint64_t value, unsigned base) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[value % base];
        value /= base;
    } while (value != 0);
    for (int i = 0; i < n / 2; i++) {
        char swap = digits[i];
        digits[i] = digits[n - 1 - i];
        digits[n - 1 - i] = swap;
    }
    append(buffer, capacity, used, digits, (size_t)n);
}

// One line a site: rule, count, thread, time (CLOCK_MONOTONIC ns), the stack's addresses in hex
// (leaf first, comma-separated) and the operation, tab-separated; then "dropped N" when the
// table was full. Async-signal-safe: a crash's handler writes the recording.
int lo_agent_rules_found(void) { return atomic_load(&site_count) > 0 || atomic_load(&sites_dropped) > 0; }

size_t lo_agent_violations_text(char *buffer, size_t capacity) {
    size_t used = 0;
    int count = atomic_load(&site_count);
    for (int i = 0; i < count; i++) {
        const lo_rule_site *site = &sites[i];
        const char *name = rule_name(site->rule);
        append(buffer, capacity, &used, name, strlen(name));
        append(buffer, capacity, &used, "\t", 1);
        append_number(buffer, capacity, &used, site->count, 10);
        append(buffer, capacity, &used, "\t", 1);
        append_number(buffer, capacity, &used, (uint64_t)site->tid, 10);
        append(buffer, capacity, &used, "\t", 1);
        append_number(buffer, capacity, &used, site->time_ns, 10);
        append(buffer, capacity, &used, "\t", 1);
        for (int frame = 0; frame < site->depth; frame++) {
            if (frame > 0) append(buffer, capacity, &used, ",", 1);
            append_number(buffer, capacity, &used, site->frames[frame], 16);
        }
        append(buffer, capacity, &used, "\t", 1);
        append(buffer, capacity, &used, site->operation, strlen(site->operation));
        append(buffer, capacity, &used, "\n", 1);
    }
    uint64_t dropped = atomic_load(&sites_dropped);
    if (dropped > 0) {
        append(buffer, capacity, &used, "dropped\t", 8);
        append_number(buffer, capacity, &used, dropped, 10);
        append(buffer, capacity, &used, "\n", 1);
    }
    return used;
}
