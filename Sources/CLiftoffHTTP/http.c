// libcurl's easy interface, loaded with dlopen when the first request is made: the command line
// does not map libcurl and the libraries it pulls in (TLS, HTTP/2, Kerberos) unless it sends.
// The option numbers are libcurl's stable ABI (curl/curl.h: CURLOPTTYPE_LONG 0,
// CURLOPTTYPE_OBJECTPOINT 10000, CURLOPTTYPE_FUNCTIONPOINT 20000, CURLOPTTYPE_OFF_T 30000).
#include "lo_http.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    LO_CURLOPT_WRITEDATA = 10001,
    LO_CURLOPT_URL = 10002,
    LO_CURLOPT_ERRORBUFFER = 10010,
    LO_CURLOPT_POSTFIELDS = 10015,
    LO_CURLOPT_HTTPHEADER = 10023,
    LO_CURLOPT_HEADERDATA = 10029,
    LO_CURLOPT_POST = 47,
    LO_CURLOPT_NOSIGNAL = 99,
    LO_CURLOPT_TIMEOUT_MS = 155,
    LO_CURLOPT_CONNECTTIMEOUT_MS = 156,
    LO_CURLOPT_WRITEFUNCTION = 20011,
    LO_CURLOPT_HEADERFUNCTION = 20079,
    LO_CURLOPT_POSTFIELDSIZE_LARGE = 30120,
    LO_CURLINFO_RESPONSE_CODE = 0x200002,
    LO_CURL_GLOBAL_DEFAULT = 3,
    LO_CURL_ERROR_SIZE = 256,
};

struct lo_slist;

static struct {
    void *handle;
    int (*global_init)(long);
    void *(*easy_init)(void);
    int (*easy_setopt)(void *, int, ...);
    int (*easy_perform)(void *);
    int (*easy_getinfo)(void *, int, ...);
    void (*easy_cleanup)(void *);
    const char *(*easy_strerror)(int);
    struct lo_slist *(*slist_append)(struct lo_slist *, const char *);
    void (*slist_free_all)(struct lo_slist *);
    char why[200];
} curl;

static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void) {
    const char *names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4"};
    for (size_t index = 0; index < sizeof names / sizeof names[0] && !curl.handle; index++) {
        curl.handle = dlopen(names[index], RTLD_NOW | RTLD_LOCAL);
    }
    if (!curl.handle) {
        snprintf(curl.why, sizeof curl.why, "libcurl (libcurl.so.4) could not be loaded: install libcurl4");
        return;
    }
#define FIND(field, symbol)                                                                              \
    do {                                                                                                 \
        *(void **)&curl.field = dlsym(curl.handle, symbol);                                              \
        if (!curl.field) {                                                                               \
            snprintf(curl.why, sizeof curl.why, "libcurl has no %s: it is too old", symbol);             \
            curl.handle = NULL;                                                                          \
            return;                                                                                      \
        }                                                                                                \
    } while (0)
    FIND(global_init, "curl_global_init");
    FIND(easy_init, "curl_easy_init");
    FIND(easy_setopt, "curl_easy_setopt");
    FIND(easy_perform, "curl_easy_perform");
    FIND(easy_getinfo, "curl_easy_getinfo");
    FIND(easy_cleanup, "curl_easy_cleanup");
    FIND(easy_strerror, "curl_easy_strerror");
    FIND(slist_append, "curl_slist_append");
    FIND(slist_free_all, "curl_slist_free_all");
#undef FIND
    if (curl.global_init(LO_CURL_GLOBAL_DEFAULT) != 0) {
        snprintf(curl.why, sizeof curl.why, "libcurl could not start");
        curl.handle = NULL;
    }
}

typedef struct {
    char *bytes;
    size_t length;
    int failed;
} buffer;

static size_t keep_body(char *data, size_t size, size_t count, void *context) {
    buffer *body = context;
    size_t bytes = size * count;
    // The answers read here are short; a large one is cut at 1 MiB, not kept whole.
    if (body->length + bytes > (1u << 20)) return bytes;
    char *grown = realloc(body->bytes, body->length + bytes + 1);
    if (!grown) {
        body->failed = 1;
        return 0;
    }
    memcpy(grown + body->length, data, bytes);
    body->length += bytes;
    grown[body->length] = 0;
    body->bytes = grown;
    return bytes;
}

static size_t read_header(char *data, size_t size, size_t count, void *context) {
    long *retry_after = context;
    size_t bytes = size * count;
    const char name[] = "retry-after:";
    if (bytes > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t position = sizeof name - 1;
        while (position < bytes && (data[position] == ' ' || data[position] == '\t')) position++;
        long seconds = 0;
        int digits = 0;
        while (position < bytes && isdigit((unsigned char)data[position]) && digits < 9) {
            seconds = seconds * 10 + (data[position] - '0');
            position++;
            digits++;
        }
        *retry_after = digits > 0 ? seconds : -1;
    }
    return bytes;
}

int lo_http_post(const char *url, const char *const *headers, size_t header_count, const void *body, size_t length,
                 long timeout_ms, lo_http_response *response) {
    memset(response, 0, sizeof *response);
    response->retry_after = -1;
    pthread_once(&loaded, load);
    if (!curl.handle) {
        snprintf(response->error, sizeof response->error, "%s", curl.why);
        return -1;
    }
    void *easy = curl.easy_init();
    if (!easy) {
        snprintf(response->error, sizeof response->error, "libcurl could not make a request");
        return 1;
    }
    struct lo_slist *list = NULL;
    for (size_t index = 0; index < header_count; index++) {
        struct lo_slist *grown = curl.slist_append(list, headers[index]);
        if (grown) list = grown;
    }
    // "Expect: 100-continue" would wait for a server that may not answer it.
    struct lo_slist *grown = curl.slist_append(list, "Expect:");
    if (grown) list = grown;
    buffer answer = {0};
    char error[LO_CURL_ERROR_SIZE] = {0};
    curl.easy_setopt(easy, LO_CURLOPT_URL, url);
    curl.easy_setopt(easy, LO_CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(easy, LO_CURLOPT_POST, 1L);
    curl.easy_setopt(easy, LO_CURLOPT_POSTFIELDS, body);
    curl.easy_setopt(easy, LO_CURLOPT_POSTFIELDSIZE_LARGE, (int64_t)length);
    curl.easy_setopt(easy, LO_CURLOPT_HTTPHEADER, list);
    curl.easy_setopt(easy, LO_CURLOPT_TIMEOUT_MS, timeout_ms);
    curl.easy_setopt(easy, LO_CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl.easy_setopt(easy, LO_CURLOPT_WRITEFUNCTION, keep_body);
    curl.easy_setopt(easy, LO_CURLOPT_WRITEDATA, &answer);
    curl.easy_setopt(easy, LO_CURLOPT_HEADERFUNCTION, read_header);
    curl.easy_setopt(easy, LO_CURLOPT_HEADERDATA, &response->retry_after);
    curl.easy_setopt(easy, LO_CURLOPT_ERRORBUFFER, error);
    int code = curl.easy_perform(easy);
    int result = 0;
    if (code != 0) {
        snprintf(response->error, sizeof response->error, "%s", error[0] ? error : curl.easy_strerror(code));
        free(answer.bytes);
        result = 1;
    } else {
        curl.easy_getinfo(easy, LO_CURLINFO_RESPONSE_CODE, &response->status);
        response->body = answer.bytes;
        response->body_length = answer.length;
    }
    curl.easy_cleanup(easy);
    curl.slist_free_all(list);
    return result;
}

void lo_http_free(lo_http_response *response) {
    free(response->body);
    response->body = NULL;
    response->body_length = 0;
}
