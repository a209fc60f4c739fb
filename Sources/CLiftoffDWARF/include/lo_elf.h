#ifndef LO_ELF_H
#define LO_ELF_H

#include <stdint.h>
#include <stddef.h>

/// One function symbol of an ELF object, with what ranks it among others at its address.
typedef struct lo_elf_symbol {
    /// Its link-time address.
    uint64_t start;
    /// Its size; for an unsized symbol, the rest of its section (0 when that is unknown).
    uint64_t size;
    /// Where its name starts in its string table.
    uint32_t name_offset;
    /// Its name's length in bytes.
    uint32_t name_length;
    /// The order it was read in: of two equal ranks at one address, the earlier is kept.
    uint32_t sequence;
    /// How many underscores start its name (at most 65,535).
    uint16_t underscores;
    /// Which of the caller's string tables holds its name.
    uint8_t string_table;
    /// 2 for a global symbol, 1 for a weak one, 0 for a local one.
    uint8_t binding_score;
    /// Whether the symbol table gave it a size.
    uint8_t sized;
    /// Of two symbols at one address, the one with the lower priority is kept whatever their ranks.
    uint8_t priority;
} lo_elf_symbol;

/// A section's link-time address and size, by section index: where an unsized symbol ends.
typedef struct lo_elf_extent {
    uint64_t address;
    uint64_t size;
} lo_elf_extent;

/// Reads the function symbols (`STT_FUNC`, `STT_GNU_IFUNC`, defined, non-zero address and name)
/// of one `SHT_SYMTAB` or `SHT_DYNSYM` section's `entries` (24-byte ELF64 little-endian entries)
/// whose names are in `strings`. Writes at most `capacity` to `out`, numbering them from
/// `first_sequence`, each naming `string_table`; returns how many it wrote.
size_t lo_elf_function_symbols(
    const uint8_t *entries, size_t entries_size, const uint8_t *strings, size_t strings_size, uint8_t string_table,
    const lo_elf_extent *sections, size_t section_count, uint32_t first_sequence, lo_elf_symbol *out, size_t capacity);

/// Sorts `symbols` by address and keeps one per address: the lowest priority, then the one perf
/// would name it by (a sized symbol, then global over weak over local, then fewer leading
/// underscores, then the longer name), then the earliest read. Returns how many are kept, first.
size_t lo_elf_sort_unique(lo_elf_symbol *symbols, size_t count);

/// One function's link-time address range, from an `.eh_frame_hdr` table.
typedef struct lo_elf_range {
    uint64_t start;
    uint64_t end;
} lo_elf_range;

/// Reads the function ranges of the `.eh_frame_hdr` section `hdr` at link-time `hdr_address`:
/// its sorted table's starts, each ending where its FDE in `frames` (the `.eh_frame` section at
/// `frames_address`; NULL when not found) says, or at the next start when the FDE cannot be read.
/// Only the encodings compilers write for x86_64 and aarch64 are read. Writes at most `capacity`
/// ranges to `out` and returns how many it wrote; `*total` gets how many the table holds
/// (0 when it is not a table this reads).
size_t lo_elf_function_ranges(
    const uint8_t *hdr, size_t hdr_size, uint64_t hdr_address, const uint8_t *frames, size_t frames_size,
    uint64_t frames_address, lo_elf_range *out, size_t capacity, size_t *total);

#endif
