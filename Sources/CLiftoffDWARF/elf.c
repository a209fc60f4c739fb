// The loops over an object's symbol table and call-frame index, which hold hundreds of thousands
// of entries in a large program: in C they take milliseconds in any build configuration.

#include "lo_elf.h"

#include <stdlib.h>
#include <string.h>

static uint16_t read16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t read32(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24); }
static uint64_t read64(const uint8_t *p) { return (uint64_t)read32(p) | ((uint64_t)read32(p + 4) << 32); }

size_t lo_elf_function_symbols(
    const uint8_t *entries, size_t entries_size, const uint8_t *strings, size_t strings_size, uint8_t string_table,
    const lo_elf_extent *sections, size_t section_count, uint32_t first_sequence, lo_elf_symbol *out, size_t capacity) {
    size_t written = 0;
    uint32_t sequence = first_sequence;
    for (size_t entry = 0; entries_size >= 24 && entry <= entries_size - 24 && written < capacity; entry += 24) {
        const uint8_t *p = entries + entry;
        uint32_t name = read32(p);
        uint8_t info = p[4];
        uint16_t section = read16(p + 6);
        uint64_t value = read64(p + 8);
        uint64_t size = read64(p + 16);
        uint8_t type = info & 0xF;
        // STT_FUNC or STT_GNU_IFUNC, defined in some section.
        if ((type != 2 && type != 10) || section == 0 || value == 0 || name == 0) continue;
        lo_elf_symbol *symbol = &out[written++];
        memset(symbol, 0, sizeof *symbol);
        symbol->start = value;
        symbol->size = size;
        symbol->sized = size != 0;
        // An unsized symbol (`_init`, hand-written assembly) reaches at most the end of its
        // section: the PLT after `.init` is not `_init`.
        if (size == 0 && section < section_count) {
            uint64_t home = sections[section].address, length = sections[section].size;
            if (home + length >= home && home <= value && value < home + length) symbol->size = home + length - value;
        }
        symbol->name_offset = name;
        symbol->string_table = string_table;
        uint8_t binding = info >> 4;
        // STB_GLOBAL 1, STB_WEAK 2, STB_LOCAL 0 (and anything else) last.
        symbol->binding_score = binding == 1 ? 2 : binding == 2 ? 1 : 0;
        size_t index = name;
        while (index < strings_size && strings[index] == '_') index++;
        size_t underscores = index - name;
        symbol->underscores = underscores > UINT16_MAX ? UINT16_MAX : (uint16_t)underscores;
        while (index < strings_size && strings[index] != 0) index++;
        size_t length = index > name ? index - name : 0;
        symbol->name_length = length > UINT32_MAX ? UINT32_MAX : (uint32_t)length;
        symbol->sequence = sequence++;
    }
    return written;
}

/// Negative when `a` is kept over `b` at one address.
static int better(const lo_elf_symbol *a, const lo_elf_symbol *b) {
    if (a->priority != b->priority) return a->priority < b->priority ? -1 : 1;
    if (a->sized != b->sized) return a->sized ? -1 : 1;
    if (a->binding_score != b->binding_score) return a->binding_score > b->binding_score ? -1 : 1;
    if (a->underscores != b->underscores) return a->underscores < b->underscores ? -1 : 1;
    if (a->name_length != b->name_length) return a->name_length > b->name_length ? -1 : 1;
    if (a->sequence != b->sequence) return a->sequence < b->sequence ? -1 : 1;
    return 0;
}

static int by_address_then_rank(const void *left, const void *right) {
    const lo_elf_symbol *a = left, *b = right;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return better(a, b);
}

size_t lo_elf_sort_unique(lo_elf_symbol *symbols, size_t count) {
    if (count == 0) return 0;
    qsort(symbols, count, sizeof *symbols, by_address_then_rank);
    size_t kept = 1;
    for (size_t index = 1; index < count; index++) {
        if (symbols[index].start == symbols[kept - 1].start) continue;
        symbols[kept++] = symbols[index];
    }
    return kept;
}

size_t lo_elf_function_ranges(
    const uint8_t *hdr, size_t hdr_size, uint64_t hdr_address, const uint8_t *frames, size_t frames_size,
    uint64_t frames_address, lo_elf_range *out, size_t capacity, size_t *total) {
    *total = 0;
    // Version 1, a 4-byte signed count (udata4 or sdata4), a table of `datarel sdata4` pairs.
    if (hdr_size < 12 || hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3B) return 0;
    size_t pointer_size;
    switch (hdr[1] & 0x0F) {
    case 0x03: case 0x0B: pointer_size = 4; break;
    case 0x04: case 0x0C: pointer_size = 8; break;
    default: return 0;
    }
    if (4 + pointer_size + 4 > hdr_size) return 0;
    uint32_t count = read32(hdr + 4 + pointer_size);
    size_t table = 8 + pointer_size;
    if (count > (hdr_size - table) / 8) return 0;
    *total = count;
    size_t written = 0;
    for (size_t index = 0; index < count && written < capacity; index++) {
        const uint8_t *pair = hdr + table + index * 8;
        uint64_t start = hdr_address + (uint64_t)(int64_t)(int32_t)read32(pair);
        uint64_t fde = hdr_address + (uint64_t)(int64_t)(int32_t)read32(pair + 4);
        uint64_t next = index + 1 < count ? hdr_address + (uint64_t)(int64_t)(int32_t)read32(pair + 8) : UINT64_MAX;
        uint64_t end = next;
        if (frames && fde >= frames_address && fde - frames_address <= frames_size && frames_size - (fde - frames_address) >= 16) {
            const uint8_t *body = frames + (fde - frames_address);
            uint32_t length = read32(body);
            int32_t begin = (int32_t)read32(body + 8);
            uint32_t size = read32(body + 12);
            if (length != 0xFFFFFFFFu && fde + 8 + (uint64_t)(int64_t)begin == start) {
                uint64_t fde_end = start + size;
                if (fde_end < end) end = fde_end;
            }
        }
        if (end > start) out[written++] = (lo_elf_range){start, end};
    }
    return written;
}
