#ifndef LO_HTTP_H
#define LO_HTTP_H

#include <stddef.h>

/// The answer to one request.
typedef struct {
    /// The HTTP status; 0 when no answer came.
    long status;
    /// Seconds the server's Retry-After asked for; -1 when it sent none (or a date).
    long retry_after;
    /// The answer's body (malloc'd; lo_http_free releases it).
    char *body;
    size_t body_length;
    /// Why no answer came (libcurl's words), or why libcurl could not be loaded.
    char error[256];
} lo_http_response;

/// POSTs `length` bytes of `body` to `url` with libcurl, loaded when first needed (libcurl.so.4),
/// so that programs which never send anything never map it. `headers` are whole header lines
/// (`Name: value`). Gives up after `timeout_ms` (connecting included).
/// Returns 0 when an answer came (whatever its status), 1 when none came, and -1 when libcurl
/// could not be loaded; `response->error` then says why.
int lo_http_post(const char *url, const char *const *headers, size_t header_count, const void *body, size_t length,
                 long timeout_ms, lo_http_response *response);

/// Releases what a response holds.
void lo_http_free(lo_http_response *response);

#endif
