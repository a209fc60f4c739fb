// MiniDebugInfo: the `.gnu_debugdata` section some distributions add to stripped objects, an
// xz-compressed ELF file that holds the symbols of their local functions. liblzma is loaded with
// dlopen on first use, as libdw is: a program that links Liftoff does not pay for it.

#include "lo_dwarf.h"

#include <dlfcn.h>
#include <lzma.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct {
    __typeof__(lzma_stream_decoder) *stream_decoder;
    __typeof__(lzma_code) *code;
    __typeof__(lzma_end) *end;
} xz;
static int xz_loaded;
static pthread_once_t xz_once = PTHREAD_ONCE_INIT;

static void load_liblzma(void) {
    void *library = dlopen("liblzma.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    xz.stream_decoder = (__typeof__(lzma_stream_decoder) *)dlsym(library, "lzma_stream_decoder");
    xz.code = (__typeof__(lzma_code) *)dlsym(library, "lzma_code");
    xz.end = (__typeof__(lzma_end) *)dlsym(library, "lzma_end");
    xz_loaded = xz.stream_decoder && xz.code && xz.end;
}

uint8_t *lo_xz_decode(const uint8_t *input, size_t length, size_t limit, size_t *decoded) {
    *decoded = 0;
    pthread_once(&xz_once, load_liblzma);
    if (!xz_loaded || input == NULL || length == 0) return NULL;
    lzma_stream stream = LZMA_STREAM_INIT;
    if (xz.stream_decoder(&stream, UINT64_MAX, 0) != LZMA_OK) return NULL;
    size_t capacity = length * 4 < limit ? length * 4 : limit;
    if (capacity < 4096) capacity = 4096;
    uint8_t *output = malloc(capacity);
    if (output == NULL) {
        xz.end(&stream);
        return NULL;
    }
    stream.next_in = input;
    stream.avail_in = length;
    stream.next_out = output;
    stream.avail_out = capacity;
    lzma_ret result;
    for (;;) {
        result = xz.code(&stream, LZMA_FINISH);
        if (result != LZMA_OK) break;
        if (stream.avail_out == 0) {
            if (capacity >= limit) {
                result = LZMA_MEMLIMIT_ERROR;
                break;
            }
            size_t grown = capacity * 2 < limit ? capacity * 2 : limit;
            uint8_t *bigger = realloc(output, grown);
            if (bigger == NULL) {
                result = LZMA_MEM_ERROR;
                break;
            }
            output = bigger;
            stream.next_out = output + capacity;
            stream.avail_out = grown - capacity;
            capacity = grown;
        }
    }
    size_t produced = capacity - stream.avail_out;
    xz.end(&stream);
    if (result != LZMA_STREAM_END) {
        free(output);
        return NULL;
    }
    *decoded = produced;
    return output;
}
