#ifndef LO_DWARF_H
#define LO_DWARF_H

#include <stdint.h>
#include <stddef.h>

/// The DWARF debug information of one ELF file, read with elfutils' libdw.
typedef struct lo_dwarf lo_dwarf;

/// One frame of a source location: a function, and the line it was executing. A function
/// inlined into another gives a frame of its own.
typedef struct {
    /// The function's linkage (mangled) name, or its plain name; NULL when unknown.
    const char *function;
    /// The source file of `line`; NULL when unknown.
    const char *file;
    /// The line being executed (the call's line, for a frame that called an inlined function); 0 when unknown.
    uint32_t line;
    /// The column of `line`; 0 when unknown.
    uint32_t column;
    /// The source file that declares the function; NULL when unknown.
    const char *decl_file;
    /// The line that declares the function; 0 when unknown.
    uint32_t decl_line;
    /// Whether this function was inlined into the frame after it.
    int inlined;
} lo_source_frame;

/// Whether libdw (`libdw.so.1`, elfutils) could be loaded; it is loaded on the first call.
int lo_dwarf_available(void);

/// Opens the DWARF of the ELF file at `path`; NULL when it has none, it cannot be read, or
/// libdw is not installed.
lo_dwarf *lo_dwarf_open(const char *path);

/// Frees everything `lo_dwarf_open` returned, including the strings of earlier lookups.
void lo_dwarf_close(lo_dwarf *dwarf);

/// Resolves a link-time address to source frames, innermost (the inlined callee) first.
/// Writes at most `capacity` frames and returns how many it wrote: 0 when the file has no
/// line or function for the address. Strings stay valid until `lo_dwarf_close`.
/// Not thread-safe: serialize calls on one `lo_dwarf`.
int lo_dwarf_lookup(lo_dwarf *dwarf, uint64_t address, lo_source_frame *frames, int capacity);

/// Decompresses an xz stream (a `.gnu_debugdata` section) of `length` bytes into a new buffer the
/// caller frees, of at most `limit` bytes; `*decoded` gets its length. NULL when it is not a
/// whole xz stream, is larger than `limit`, or liblzma is not installed.
uint8_t *lo_xz_decode(const uint8_t *input, size_t length, size_t limit, size_t *decoded);

#endif
