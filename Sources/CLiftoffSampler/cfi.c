// Call-frame information: where a frame's caller is, for the code at one address.
//
// The handler walks stacks itself (walk.c). For each frame it needs the rule of the code at that
// address: where the canonical frame address (CFA) is (rsp or rbp plus an offset), where the
// caller's rbp and the return address were saved relative to it, or that the frame is the
// outermost one. Swift and most C++ code keep frame pointers, and for them the rule says just that
// (CFA = rbp + 16); the C library does not, and there the rule is what finds the caller at all.
//
// The rule comes from the object's .eh_frame, found through the sorted table of its .eh_frame_hdr,
// both mapped with the object. The sampler thread prepares each object when it is loaded
// (snapshot.c: its code range, its table, its pages made resident), so a handler never parses more
// than the one entry it needs or faults a page in. Every read stays inside the object's segment
// that holds the tables. Rules found are kept in a lock-free cache keyed by address, one 64-bit
// word each: a warm frame costs one load.

#include "lo_internal.h"

#include <stdlib.h>
#include <string.h>

// DWARF register numbers on x86_64, and the return address column.
#define LO_DW_RBX 3
#define LO_DW_R14 14
#define LO_DW_RBP 6
#define LO_DW_RSP 7
#define LO_DW_RA 16

enum { LO_HOW_SAME = 0, LO_HOW_OFFSET = 1, LO_HOW_UNDEFINED = 2, LO_HOW_OTHER = 3 };
#define LO_CFA_OTHER 3

// The registers a walk follows: rbp and rbx (the bases a CFA is found from, besides rsp: rbx where
// code realigns its stack, as the loader's lazy-binding trampoline does), the return address, and
// r14 (where a Swift async function keeps its async context).
enum { LO_TRACK_FP = 0, LO_TRACK_BX = 1, LO_TRACK_RA = 2, LO_TRACK_R14 = 3, LO_TRACKED = 4 };

typedef struct lo_cfi_state {
    uint8_t cfa_reg; // LO_CFA_RSP, LO_CFA_RBP, LO_CFA_RBX or LO_CFA_OTHER
    int64_t cfa_offset;
    uint8_t how[LO_TRACKED];
    int64_t offset[LO_TRACKED];
} lo_cfi_state;

static int lo_tracked(uint64_t reg) {
    return reg == LO_DW_RBP ? LO_TRACK_FP
           : reg == LO_DW_RBX ? LO_TRACK_BX
           : reg == LO_DW_RA  ? LO_TRACK_RA
           : reg == LO_DW_R14 ? LO_TRACK_R14
                              : -1;
}

// A bounded reader over [cursor, end).
typedef struct lo_reader {
    const uint8_t *cursor, *end;
    int failed;
} lo_reader;

static uint64_t lo_read_bytes(lo_reader *r, size_t size) {
    if (r->failed || (size_t)(r->end - r->cursor) < size) {
        r->failed = 1;
        return 0;
    }
    uint64_t value = 0;
    memcpy(&value, r->cursor, size); // little-endian, as every supported target
    r->cursor += size;
    return value;
}

static uint64_t lo_read_uleb(lo_reader *r) {
    uint64_t value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t byte = (uint8_t)lo_read_bytes(r, 1);
        if (r->failed) return 0;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return value;
    }
    r->failed = 1;
    return 0;
}

static int64_t lo_read_sleb(lo_reader *r) {
    uint64_t value = 0;
    unsigned shift = 0;
    uint8_t byte;
    do {
        byte = (uint8_t)lo_read_bytes(r, 1);
        if (r->failed || shift >= 64) {
            r->failed = 1;
            return 0;
        }
        value |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) value |= ~0ull << shift;
    return (int64_t)value;
}

// DW_EH_PE_* pointer encodings: the low nibble is the format, bits 4..6 what it is relative to.
static uintptr_t lo_read_encoded(lo_reader *r, uint8_t encoding, uintptr_t data_base) {
    if (encoding == 0xff) return 0; // DW_EH_PE_omit
    const uint8_t *at = r->cursor;
    uint64_t value;
    switch (encoding & 0x0f) {
    case 0x00: value = lo_read_bytes(r, 8); break;                   // absptr
    case 0x01: value = lo_read_uleb(r); break;                       // uleb128
    case 0x02: value = lo_read_bytes(r, 2); break;                   // udata2
    case 0x03: value = lo_read_bytes(r, 4); break;                   // udata4
    case 0x04: value = lo_read_bytes(r, 8); break;                   // udata8
    case 0x09: value = (uint64_t)lo_read_sleb(r); break;             // sleb128
    case 0x0a: value = (uint64_t)(int64_t)(int16_t)lo_read_bytes(r, 2); break;
    case 0x0b: value = (uint64_t)(int64_t)(int32_t)lo_read_bytes(r, 4); break;
    case 0x0c: value = lo_read_bytes(r, 8); break;
    default: r->failed = 1; return 0;
    }
    switch (encoding & 0x70) {
    case 0x00: break;
    case 0x10: value += (uintptr_t)at; break; // pcrel
    case 0x30: value += data_base; break;     // datarel
    default: r->failed = 1; return 0;         // textrel, funcrel, aligned: not used in .eh_frame
    }
    if (encoding & 0x80) r->failed = 1; // indirect: would read memory the rule does not need
    return (uintptr_t)value;
}

// One entry of .eh_frame (a CIE or an FDE) at `at`: its contents, bounded to the object's segment.
static int lo_entry(const lo_object *object, const uint8_t *at, lo_reader *contents, const uint8_t **id_field) {
    if (at < object->tables_start || at > object->tables_end) return 0;
    lo_reader r = {at, object->tables_end, 0};
    uint64_t length = lo_read_bytes(&r, 4);
    if (length == 0xffffffffu) length = lo_read_bytes(&r, 8);
    if (r.failed || length == 0 || length > (uint64_t)(r.end - r.cursor)) return 0;
    *id_field = r.cursor;
    contents->cursor = r.cursor;
    contents->end = r.cursor + length;
    contents->failed = 0;
    return 1;
}

typedef struct lo_cie {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_encoding, signal_frame, has_augmentation_data;
    lo_reader initial; // the initial instructions
} lo_cie;

static int lo_parse_cie(const lo_object *object, const uint8_t *at, lo_cie *cie) {
    lo_reader r;
    const uint8_t *id_field;
    if (!lo_entry(object, at, &r, &id_field)) return 0;
    if (lo_read_bytes(&r, 4) != 0) return 0; // a CIE's id is 0 in .eh_frame
    uint8_t version = (uint8_t)lo_read_bytes(&r, 1);
    if (version != 1 && version != 3) return 0;
    const char *augmentation = (const char *)r.cursor;
    size_t augmentation_length = 0;
    while (r.cursor + augmentation_length < r.end && augmentation[augmentation_length] != 0) augmentation_length++;
    if (r.cursor + augmentation_length >= r.end) return 0;
    r.cursor += augmentation_length + 1;
    cie->code_align = lo_read_uleb(&r);
    cie->data_align = lo_read_sleb(&r);
    uint64_t ra_column = version == 1 ? lo_read_bytes(&r, 1) : lo_read_uleb(&r);
    if (r.failed || ra_column != LO_DW_RA) return 0;
    cie->fde_encoding = 0; // absptr
    cie->signal_frame = 0;
    cie->has_augmentation_data = augmentation[0] == 'z';
    if (cie->has_augmentation_data) {
        uint64_t data_length = lo_read_uleb(&r);
        if (r.failed || data_length > (uint64_t)(r.end - r.cursor)) return 0;
        lo_reader data = {r.cursor, r.cursor + data_length, 0};
        for (size_t i = 1; i < augmentation_length; i++) {
            switch (augmentation[i]) {
            case 'R': cie->fde_encoding = (uint8_t)lo_read_bytes(&data, 1); break;
            case 'L': (void)lo_read_bytes(&data, 1); break;
            case 'P': {
                uint8_t encoding = (uint8_t)lo_read_bytes(&data, 1);
                (void)lo_read_encoded(&data, encoding & 0x7f, 0); // the personality: not followed
                break;
            }
            case 'S': cie->signal_frame = 1; break;
            case 'B': break;
            default: return 0;
            }
        }
        if (data.failed) return 0;
        r.cursor += data_length;
    } else if (augmentation_length != 0) {
        return 0;
    }
    cie->initial = r;
    return !r.failed;
}

#define LO_STATE_STACK 8
#define LO_EXPRESSION_STACK 8

// A CFA expression that comes to rsp plus a constant at code address `pc`, as a PLT stub's does
// (rsp + 8, plus 8 more past its push: it tests the program counter). Each value on the stack is
// `sp_count * rsp + constant`; operators other than addition take constants only.
static int lo_cfa_expression(lo_reader *r, uintptr_t pc, int64_t *offset_from_sp) {
    int64_t constant[LO_EXPRESSION_STACK];
    int sp_count[LO_EXPRESSION_STACK];
    int depth = 0;
    while (r->cursor < r->end) {
        uint8_t op = (uint8_t)lo_read_bytes(r, 1);
        int64_t value = 0;
        int pushes_sp = 0;
        if (op >= 0x30 && op <= 0x4f) { // DW_OP_lit0..31
            value = op - 0x30;
        } else if (op >= 0x70 && op <= 0x8f) { // DW_OP_breg0..31
            int64_t offset = lo_read_sleb(r);
            if (op == 0x70 + LO_DW_RSP) value = offset, pushes_sp = 1;
            else if (op == 0x70 + LO_DW_RA) value = (int64_t)pc + offset;
            else return 0;
        } else if (op == 0x08) value = (int64_t)lo_read_bytes(r, 1);            // const1u
        else if (op == 0x09) value = (int8_t)lo_read_bytes(r, 1);               // const1s
        else if (op == 0x0a) value = (int64_t)lo_read_bytes(r, 2);              // const2u
        else if (op == 0x0b) value = (int16_t)lo_read_bytes(r, 2);              // const2s
        else if (op == 0x0c) value = (int64_t)lo_read_bytes(r, 4);              // const4u
        else if (op == 0x0d) value = (int32_t)lo_read_bytes(r, 4);              // const4s
        else if (op == 0x10) value = (int64_t)lo_read_uleb(r);                  // constu
        else if (op == 0x11) value = lo_read_sleb(r);                           // consts
        else if (op == 0x23) {                                                  // plus_uconst
            if (depth < 1) return 0;
            constant[depth - 1] += (int64_t)lo_read_uleb(r);
            continue;
        } else {
            // A binary operator.
            if (depth < 2) return 0;
            int64_t a = constant[depth - 2], b = constant[depth - 1];
            int sa = sp_count[depth - 2], sb = sp_count[depth - 1];
            depth -= 2;
            if (op == 0x22) { // plus
                if (sa + sb > 1) return 0;
                value = a + b, pushes_sp = sa + sb;
            } else {
                if (sa || sb) return 0;
                switch (op) {
                case 0x1a: value = a & b; break;                            // and
                case 0x1c: value = a - b; break;                            // minus
                case 0x1e: value = a * b; break;                            // mul
                case 0x21: value = a | b; break;                            // or
                case 0x24: value = b >= 0 && b < 64 ? (int64_t)((uint64_t)a << b) : 0; break; // shl
                case 0x25: value = b >= 0 && b < 64 ? (int64_t)((uint64_t)a >> b) : 0; break; // shr
                case 0x27: value = a ^ b; break;                            // xor
                case 0x29: value = a == b; break;                           // eq
                case 0x2a: value = a >= b; break;                           // ge
                case 0x2b: value = a > b; break;                            // gt
                case 0x2c: value = a <= b; break;                           // le
                case 0x2d: value = a < b; break;                            // lt
                case 0x2e: value = a != b; break;                           // ne
                default: return 0;
                }
            }
        }
        if (r->failed || depth == LO_EXPRESSION_STACK) return 0;
        constant[depth] = value;
        sp_count[depth] = pushes_sp;
        depth++;
    }
    if (r->failed || depth != 1 || sp_count[0] != 1) return 0;
    *offset_from_sp = constant[0];
    return 1;
}

// Runs CFA instructions from `r`, starting at code address `location`, up to `target`.
static int lo_execute(lo_reader *r, const lo_cie *cie, uintptr_t location, uintptr_t target, lo_cfi_state *state,
                      const lo_cfi_state *initial, uint8_t fde_encoding) {
    lo_cfi_state stack[LO_STATE_STACK];
    int stack_depth = 0;
    while (r->cursor < r->end) {
        uint8_t op = (uint8_t)lo_read_bytes(r, 1);
        uint8_t low = op & 0x3f;
        uint64_t reg = 0, advance = 0;
        int64_t offset = 0;
        // Every instruction but an advance of the location continues the loop or jumps below.
        switch (op >> 6) {
        case 1: advance = low; break;                           // DW_CFA_advance_loc
        case 2: reg = low; offset = (int64_t)lo_read_uleb(r) * cie->data_align; goto set_offset; // DW_CFA_offset
        case 3: reg = low; goto restore;                        // DW_CFA_restore
        default:
            switch (op) {
            case 0x00: continue; // nop
            case 0x01: {         // set_loc
                uintptr_t to = lo_read_encoded(r, fde_encoding, 0);
                if (r->failed || to < location) return 0;
                if (to > target) return 1;
                location = to;
                continue;
            }
            case 0x02: advance = lo_read_bytes(r, 1); break;
            case 0x03: advance = lo_read_bytes(r, 2); break;
            case 0x04: advance = lo_read_bytes(r, 4); break;
            case 0x05: reg = lo_read_uleb(r); offset = (int64_t)lo_read_uleb(r) * cie->data_align; goto set_offset;
            case 0x06: reg = lo_read_uleb(r); goto restore;
            case 0x07: reg = lo_read_uleb(r); goto set_undefined;
            case 0x08: reg = lo_read_uleb(r); goto set_same;
            case 0x09: reg = lo_read_uleb(r); (void)lo_read_uleb(r); goto set_other; // register
            case 0x0a:
                if (stack_depth == LO_STATE_STACK) return 0;
                stack[stack_depth++] = *state;
                continue;
            case 0x0b:
                if (stack_depth == 0) return 0;
                *state = stack[--stack_depth];
                continue;
            case 0x0c: // def_cfa
                reg = lo_read_uleb(r);
                state->cfa_offset = (int64_t)lo_read_uleb(r);
                goto set_cfa_register;
            case 0x0d: reg = lo_read_uleb(r); goto set_cfa_register;
            case 0x0e: state->cfa_offset = (int64_t)lo_read_uleb(r); continue;
            case 0x0f: { // def_cfa_expression
                uint64_t length = lo_read_uleb(r);
                if (r->failed || length > (uint64_t)(r->end - r->cursor)) return 0;
                lo_reader expression = {r->cursor, r->cursor + length, 0};
                r->cursor += length;
                int64_t offset_from_sp;
                if (lo_cfa_expression(&expression, target, &offset_from_sp)) {
                    state->cfa_reg = LO_CFA_RSP;
                    state->cfa_offset = offset_from_sp;
                } else {
                    state->cfa_reg = LO_CFA_OTHER;
                }
                continue;
            }
            case 0x10:   // expression
            case 0x16: { // val_expression
                reg = lo_read_uleb(r);
                uint64_t length = lo_read_uleb(r);
                if (r->failed || length > (uint64_t)(r->end - r->cursor)) return 0;
                r->cursor += length;
                goto set_other;
            }
            case 0x11: reg = lo_read_uleb(r); offset = lo_read_sleb(r) * cie->data_align; goto set_offset;
            case 0x12: // def_cfa_sf
                reg = lo_read_uleb(r);
                state->cfa_offset = lo_read_sleb(r) * cie->data_align;
                goto set_cfa_register;
            case 0x13: state->cfa_offset = lo_read_sleb(r) * cie->data_align; continue;
            case 0x14: reg = lo_read_uleb(r); (void)lo_read_uleb(r); goto set_other; // val_offset
            case 0x15: reg = lo_read_uleb(r); (void)lo_read_sleb(r); goto set_other; // val_offset_sf
            case 0x2e: (void)lo_read_uleb(r); continue;                              // GNU_args_size
            case 0x2f:                                                                // GNU_negative_offset_extended
                reg = lo_read_uleb(r);
                offset = -(int64_t)lo_read_uleb(r) * cie->data_align;
                goto set_offset;
            default: return 0;
            }
        }
        if (r->failed) return 0;
        uintptr_t next = location + advance * cie->code_align;
        if (next > target) return 1;
        location = next;
        continue;
    set_offset:
        if (lo_tracked(reg) >= 0) state->how[lo_tracked(reg)] = LO_HOW_OFFSET, state->offset[lo_tracked(reg)] = offset;
        continue;
    restore:
        if (initial == NULL) return 0; // a restore among the initial instructions
        if (lo_tracked(reg) >= 0) {
            state->how[lo_tracked(reg)] = initial->how[lo_tracked(reg)];
            state->offset[lo_tracked(reg)] = initial->offset[lo_tracked(reg)];
        }
        continue;
    set_undefined:
        if (lo_tracked(reg) >= 0) state->how[lo_tracked(reg)] = LO_HOW_UNDEFINED;
        continue;
    set_same:
        if (lo_tracked(reg) >= 0) state->how[lo_tracked(reg)] = reg == LO_DW_RA ? LO_HOW_OTHER : LO_HOW_SAME;
        continue;
    set_other:
        if (lo_tracked(reg) >= 0) state->how[lo_tracked(reg)] = LO_HOW_OTHER;
        else if (reg == LO_DW_RSP) state->cfa_reg = LO_CFA_OTHER; // rsp no longer the CFA
        continue;
    set_cfa_register:
        if (r->failed) return 0;
        state->cfa_reg = reg == LO_DW_RSP ? LO_CFA_RSP : reg == LO_DW_RBP ? LO_CFA_RBP : reg == LO_DW_RBX ? LO_CFA_RBX : LO_CFA_OTHER;
        continue;
    }
    return !r->failed;
}

int lo_cfi_prepare(lo_object *object) {
    // version 1, then the encodings of the .eh_frame pointer, the count and the table.
    lo_reader r = {object->hdr, object->tables_end, 0};
    if (object->hdr < object->tables_start) return 0;
    uint8_t version = (uint8_t)lo_read_bytes(&r, 1);
    uint8_t frame_encoding = (uint8_t)lo_read_bytes(&r, 1);
    uint8_t count_encoding = (uint8_t)lo_read_bytes(&r, 1);
    uint8_t table_encoding = (uint8_t)lo_read_bytes(&r, 1);
    // Only a table of 4-byte offsets from the header can be searched in place.
    if (r.failed || version != 1 || table_encoding != 0x3b) return 0;
    (void)lo_read_encoded(&r, frame_encoding, (uintptr_t)object->hdr);
    uint64_t count = lo_read_encoded(&r, count_encoding, (uintptr_t)object->hdr);
    if (r.failed || count == 0 || count > UINT32_MAX || count * 8 > (uint64_t)(r.end - r.cursor)) return 0;
    object->table = (const int32_t *)r.cursor;
    object->fde_count = (uint32_t)count;
    return 1;
}

void lo_cfi_span(const lo_object *object, const uint8_t **start, const uint8_t **end) {
    *start = *end = NULL;
    if (object->table == NULL) return;
    // The table ends the header; .eh_frame holds the entries it points to, the last of them the
    // one at the highest address.
    const uint8_t *low = object->hdr, *high = (const uint8_t *)(object->table + 2 * (size_t)object->fde_count);
    int32_t last = 0;
    for (uint32_t i = 0; i < object->fde_count; i++) {
        if (object->table[2 * i + 1] > last) last = object->table[2 * i + 1];
    }
    const uint8_t *first_entry = object->hdr + object->table[1];
    const uint8_t *last_entry = object->hdr + last;
    lo_reader contents;
    const uint8_t *id_field;
    if (first_entry < low && first_entry >= object->tables_start) low = first_entry;
    if (lo_entry(object, last_entry, &contents, &id_field) && contents.end > high) high = contents.end;
    *start = low;
    *end = high;
}

// The FDE covering `address` in `object`, through the .eh_frame_hdr table: its start or NULL.
static const uint8_t *lo_find_fde(const lo_object *object, uintptr_t address) {
    if (object->table == NULL || object->fde_count == 0) return NULL;
    intptr_t key = (intptr_t)(address - (uintptr_t)object->hdr);
    const int32_t *table = object->table;
    uint32_t low = 0, high = object->fde_count;
    // The page index, once the sampler thread built it, narrows the search to the entries that
    // start within the address's page of code.
    const uint32_t *index = atomic_load_explicit(&object->page_index, memory_order_acquire);
    if (index != NULL && address >= object->start && address < object->end) {
        size_t page = (address - object->start) >> LO_INDEX_PAGE_SHIFT;
        low = index[page];
        high = index[page + 1] + 1;
        if (high > object->fde_count) high = object->fde_count;
    }
    if ((intptr_t)table[2 * low] > key) return NULL;
    while (high - low > 1) {
        uint32_t middle = low + (high - low) / 2;
        if ((intptr_t)table[2 * middle] <= key) low = middle;
        else high = middle;
    }
    return object->hdr + table[2 * low + 1];
}

size_t lo_cfi_index_bytes(const lo_object *object) {
    if (object->end <= object->start) return 0;
    return ((((object->end - object->start - 1) >> LO_INDEX_PAGE_SHIFT) + 1) + 1) * sizeof(uint32_t);
}

uint32_t *lo_cfi_build_index(const lo_object *object, size_t *bytes) {
    *bytes = 0;
    if (object->table == NULL || object->fde_count == 0 || object->end <= object->start) return NULL;
    size_t pages = ((object->end - object->start - 1) >> LO_INDEX_PAGE_SHIFT) + 1;
    uint32_t *index = malloc((pages + 1) * sizeof(uint32_t));
    if (index == NULL) return NULL;
    // index[p]: the last entry starting at or before page p's first byte (or the first entry).
    const int32_t *table = object->table;
    uintptr_t hdr = (uintptr_t)object->hdr;
    uint32_t entry = 0;
    for (size_t page = 0; page <= pages; page++) {
        uintptr_t page_start = object->start + (page << LO_INDEX_PAGE_SHIFT);
        while (entry + 1 < object->fde_count && hdr + (intptr_t)table[2 * (entry + 1)] <= page_start) entry++;
        index[page] = entry;
    }
    *bytes = lo_cfi_index_bytes(object);
    return index;
}

// Whether the function at `start` sets up a Swift async frame: `push %rbp; push %r14; lea
// 0x8(%rsp),%rbp`, after an optional `endbr64` and `bts $60,%rbp` (which marks the saved rbp as
// an async frame's where the platform asks for it). The async context (r14) is then kept just
// below the saved rbp. The bytes lie in the object's executable range.
static int lo_async_prologue(const lo_object *object, uintptr_t start) {
    static const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
    static const uint8_t mark[] = {0x48, 0x0f, 0xba, 0xed, 0x3c};
    static const uint8_t frame[] = {0x55, 0x41, 0x56, 0x48, 0x8d, 0x6c, 0x24, 0x08};
    if (start < object->start || start + sizeof endbr + sizeof mark + sizeof frame > object->end) return 0;
    const uint8_t *code = (const uint8_t *)start;
    if (memcmp(code, endbr, sizeof endbr) == 0) code += sizeof endbr;
    if (memcmp(code, mark, sizeof mark) == 0) code += sizeof mark;
    return memcmp(code, frame, sizeof frame) == 0;
}

int lo_cfi_find(const lo_object *object, uintptr_t address, lo_rule *rule) {
    rule->kind = LO_RULE_NONE;
    rule->async = 0;
    rule->r14_offset = 0;
    const uint8_t *fde_at = lo_find_fde(object, address);
    if (fde_at == NULL) return 0;
    lo_reader r;
    const uint8_t *id_field;
    if (!lo_entry(object, fde_at, &r, &id_field)) return 0;
    uint32_t cie_offset = (uint32_t)lo_read_bytes(&r, 4);
    if (r.failed || cie_offset == 0 || cie_offset > (uintptr_t)id_field) return 0;
    lo_cie cie;
    if (!lo_parse_cie(object, id_field - cie_offset, &cie)) return 0;
    uintptr_t start = lo_read_encoded(&r, cie.fde_encoding, 0);
    uintptr_t range = lo_read_encoded(&r, cie.fde_encoding & 0x0f, 0);
    if (r.failed || address < start || address - start >= range) return 0;
    // From here the code has call-frame information: a rule this walk cannot follow is NONE.
    if (cie.has_augmentation_data) {
        uint64_t data_length = lo_read_uleb(&r);
        if (r.failed || data_length > (uint64_t)(r.end - r.cursor)) return 1;
        r.cursor += data_length;
    }
    if (cie.signal_frame) {
        rule->kind = LO_RULE_SIGNAL;
        return 1;
    }
    // The CIE's initial instructions hold for the whole function; then the FDE's own, up to the address.
    lo_cfi_state state = {LO_CFA_OTHER, 0, {LO_HOW_SAME, LO_HOW_SAME, LO_HOW_UNDEFINED, LO_HOW_SAME}, {0, 0, 0, 0}};
    lo_reader initial = cie.initial;
    if (!lo_execute(&initial, &cie, start, UINTPTR_MAX, &state, NULL, cie.fde_encoding)) return 1;
    lo_cfi_state initial_state = state;
    if (!lo_execute(&r, &cie, start, address, &state, &initial_state, cie.fde_encoding)) return 1;
    if (state.how[LO_TRACK_RA] == LO_HOW_UNDEFINED) {
        rule->kind = LO_RULE_OUTERMOST;
        return 1;
    }
    if (state.cfa_reg == LO_CFA_OTHER || state.how[LO_TRACK_RA] != LO_HOW_OFFSET) return 1;
    if (state.how[LO_TRACK_FP] == LO_HOW_OTHER || state.how[LO_TRACK_BX] == LO_HOW_OTHER) return 1;
    if (state.cfa_offset < INT32_MIN || state.cfa_offset > INT32_MAX) return 1;
    for (int i = 0; i < LO_TRACKED; i++) {
        if (state.offset[i] < -4096 || state.offset[i] > 4096) return 1;
    }
    rule->kind = LO_RULE_FRAME;
    rule->cfa_reg = state.cfa_reg;
    rule->cfa_offset = (int32_t)state.cfa_offset;
    rule->ra_offset = (int16_t)state.offset[LO_TRACK_RA];
    rule->fp_offset = state.how[LO_TRACK_FP] == LO_HOW_OFFSET ? (int16_t)state.offset[LO_TRACK_FP] : 0;
    rule->bx_offset = state.how[LO_TRACK_BX] == LO_HOW_OFFSET ? (int16_t)state.offset[LO_TRACK_BX] : 0;
    rule->r14_offset = state.how[LO_TRACK_R14] == LO_HOW_OFFSET ? (int16_t)state.offset[LO_TRACK_R14]
                       : state.how[LO_TRACK_R14] == LO_HOW_SAME ? 0
                                                                 : LO_R14_LOST;
    rule->async = rule->cfa_reg == LO_CFA_RBP && rule->cfa_offset == 16 && rule->fp_offset == -16 &&
                  lo_async_prologue(object, start);
    return 1;
}

// ---- the cache --------------------------------------------------------------------------
//
// An entry is the address's bits above the index (tag) shifted up 30 bits, and the rule packed
// into the low 30: kind (2 bits), the CFA's register (2), the CFA offset in words (10), where
// rbp and rbx were saved, in words below the CFA (5 each; 0 when not saved), whether the frame
// is a Swift async function's (1), and where r14 was saved (5; 0x1f when it cannot be followed). The index mixes the
// tag into the address's low bits, so tag and index give back the address. Rules that do not fit
// (a return address not at CFA - 8, a large frame addressed from rsp) are not cached and found
// again each time. User-space addresses fit in 47 bits. Each entry is one atomic word, so a reader
// sees a whole entry or another one.

#define LO_CACHE_BITS 13
#define LO_RULE_BITS 30
static _Atomic uint64_t g_cache[1u << LO_CACHE_BITS];

static size_t lo_cache_slot(uintptr_t address) {
    uint64_t tag = (uint64_t)address >> LO_CACHE_BITS;
    return (size_t)((address ^ ((tag * 0x9e3779b97f4a7c15ull) >> (64 - LO_CACHE_BITS))) & ((1u << LO_CACHE_BITS) - 1));
}

int lo_cfi_cached(uintptr_t address, lo_rule *rule) {
    uint64_t entry = atomic_load_explicit(&g_cache[lo_cache_slot(address)], memory_order_relaxed);
    if (entry == 0 || (entry >> LO_RULE_BITS) != ((uint64_t)address >> LO_CACHE_BITS)) return 0;
    rule->kind = (uint8_t)(entry & 3);
    rule->cfa_reg = (uint8_t)((entry >> 2) & 3);
    rule->cfa_offset = (int32_t)(((entry >> 4) & 0x3ff) * 8);
    rule->fp_offset = (int16_t)-(int16_t)(((entry >> 14) & 0x1f) * 8);
    rule->bx_offset = (int16_t)-(int16_t)(((entry >> 19) & 0x1f) * 8);
    rule->ra_offset = -8;
    rule->async = (uint8_t)((entry >> 24) & 1);
    uint64_t r14 = (entry >> 25) & 0x1f;
    rule->r14_offset = r14 == 0x1f ? LO_R14_LOST : (int16_t)-(int16_t)(r14 * 8);
    return 1;
}

static int lo_fits_below(int16_t offset) { return offset <= 0 && offset % 8 == 0 && -offset / 8 <= 0x1f; }

void lo_cfi_remember(uintptr_t address, const lo_rule *rule) {
    if ((uint64_t)address >> 47) return;
    uint64_t packed;
    if (rule->kind == LO_RULE_FRAME) {
        if (rule->ra_offset != -8 || rule->cfa_offset < 0 || rule->cfa_offset % 8 || rule->cfa_offset / 8 > 0x3ff) return;
        if (!lo_fits_below(rule->fp_offset) || !lo_fits_below(rule->bx_offset)) return;
        uint64_t r14 = rule->r14_offset == LO_R14_LOST ? 0x1f : (uint64_t)(-rule->r14_offset / 8);
        if (rule->r14_offset != LO_R14_LOST && (!lo_fits_below(rule->r14_offset) || r14 == 0x1f)) return;
        packed = LO_RULE_FRAME | (uint64_t)rule->cfa_reg << 2 | (uint64_t)(rule->cfa_offset / 8) << 4 |
                 (uint64_t)(-rule->fp_offset / 8) << 14 | (uint64_t)(-rule->bx_offset / 8) << 19 |
                 (uint64_t)(rule->async & 1) << 24 | r14 << 25;
    } else if (rule->kind == LO_RULE_OUTERMOST || rule->kind == LO_RULE_SIGNAL) {
        packed = rule->kind;
    } else {
        return;
    }
    uint64_t entry = ((uint64_t)address >> LO_CACHE_BITS) << LO_RULE_BITS | packed;
    atomic_store_explicit(&g_cache[lo_cache_slot(address)], entry, memory_order_relaxed);
}

void lo_cfi_touch_cache(void) {
    // A relaxed add of 0 writes each page without changing an entry a handler may be writing.
    for (size_t i = 0; i < (1u << LO_CACHE_BITS); i += 4096 / sizeof(uint64_t)) {
        atomic_fetch_add_explicit(&g_cache[i], 0, memory_order_relaxed);
    }
}

void lo_cfi_forget_all(void) {
    for (size_t i = 0; i < (1u << LO_CACHE_BITS); i++) atomic_store_explicit(&g_cache[i], 0, memory_order_relaxed);
}
