// Source lines and inlined frames from DWARF, through elfutils' libdw.
//
// libdw looks compile units up through `.debug_aranges`, which Swift objects do not have, so
// `dwarf_addrdie` finds nothing for Swift code. This file indexes the units' own address
// ranges instead, then, per unit on first use, the address ranges of its functions; a lookup
// is two binary searches and a scan of one function's inlined scopes.
//
// libdw is loaded with dlopen on first use rather than linked: linking it (and the libraries it
// needs) would cost every launch of a program using Liftoff about 0.3 ms in the loader, for
// something only wanted once the profile is written. Without libdw there are no source lines.

#include "lo_dwarf.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Every libdw function used here, called through a pointer of the header's own type.
#define LO_DW_FUNCTIONS(X) \
    X(dwarf_begin) X(dwarf_end) X(dwarf_get_units) X(dwarf_tag) X(dwarf_dieoffset) X(dwarf_ranges) \
    X(dwarf_child) X(dwarf_siblingof) X(dwarf_haschildren) X(dwarf_offdie) X(dwarf_attr) \
    X(dwarf_attr_integrate) X(dwarf_formstring) X(dwarf_formudata) X(dwarf_decl_file) X(dwarf_decl_line) \
    X(dwarf_getsrc_die) X(dwarf_lineno) X(dwarf_linecol) X(dwarf_linesrc) X(dwarf_getsrcfiles) X(dwarf_filesrc)

static struct {
#define LO_DW_POINTER(name) __typeof__(name) *name;
    LO_DW_FUNCTIONS(LO_DW_POINTER)
#undef LO_DW_POINTER
} dw;
static int dw_loaded;
static pthread_once_t dw_once = PTHREAD_ONCE_INIT;

static void load_libdw(void) {
    void *library = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    int complete = 1;
#define LO_DW_LOOKUP(name) \
    dw.name = (__typeof__(name) *)dlsym(library, #name); \
    if (!dw.name) complete = 0;
    LO_DW_FUNCTIONS(LO_DW_LOOKUP)
#undef LO_DW_LOOKUP
    dw_loaded = complete;
}

int lo_dwarf_available(void) {
    pthread_once(&dw_once, load_libdw);
    return dw_loaded;
}

typedef struct {
    Dwarf_Addr low, high;
    size_t unit;
} lo_unit_range;

// One address range of a function inlined somewhere in a function; `depth` 1 is inlined
// directly into the function, 2 into that, and so on.
typedef struct {
    Dwarf_Addr low, high;
    Dwarf_Off die;
    uint32_t depth;
} lo_inlined_range;

typedef struct {
    Dwarf_Addr low, high;
    Dwarf_Off die;
    // The function's inlined scopes, listed on the first lookup inside it.
    lo_inlined_range *inlined;
    size_t inlined_count;
    int walked;
} lo_function_range;

typedef struct {
    Dwarf_Off die;
    lo_function_range *functions;
    size_t function_count;
    int indexed;
} lo_unit;

struct lo_dwarf {
    int fd;
    Dwarf *dwarf;
    lo_unit_range *ranges;
    size_t range_count;
    lo_unit *units;
    size_t unit_count;
};

static int append(void **items, size_t *count, size_t *capacity, size_t size, const void *item) {
    if (*count == *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 64;
        void *resized = realloc(*items, grown * size);
        if (!resized) return -1;
        *items = resized;
        *capacity = grown;
    }
    memcpy((char *)*items + *count * size, item, size);
    *count += 1;
    return 0;
}

// Unit ranges and function ranges both begin with `Dwarf_Addr low, high`: one comparison and one
// search serve both.
static Dwarf_Addr range_low(const void *items, size_t index, size_t stride) {
    return *(const Dwarf_Addr *)((const char *)items + index * stride);
}

static int compare_lows(const void *lhs, const void *rhs) {
    Dwarf_Addr a = range_low(lhs, 0, 0), b = range_low(rhs, 0, 0);
    return a < b ? -1 : a > b;
}

// The index of an item holding `address` among `count` items of `stride` bytes sorted by their
// low end, or -1. Ranges may overlap: a few that start below the address are looked at.
static long find_range(const void *items, size_t count, size_t stride, Dwarf_Addr address) {
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (range_low(items, middle, stride) <= address) low = middle + 1;
        else high = middle;
    }
    for (size_t index = low, looked = 0; index > 0 && looked < 8; index--, looked++) {
        const Dwarf_Addr *range = (const Dwarf_Addr *)((const char *)items + (index - 1) * stride);
        if (address >= range[0] && address < range[1]) return (long)(index - 1);
    }
    return -1;
}

lo_dwarf *lo_dwarf_open(const char *path) {
    if (!lo_dwarf_available()) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    Dwarf *dwarf = dw.dwarf_begin(fd, DWARF_C_READ);
    if (!dwarf) {
        close(fd);
        return NULL;
    }
    lo_dwarf *result = calloc(1, sizeof *result);
    if (!result) {
        dw.dwarf_end(dwarf);
        close(fd);
        return NULL;
    }
    result->fd = fd;
    result->dwarf = dwarf;
    size_t range_capacity = 0, unit_capacity = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    uint8_t unit_type;
    while (dw.dwarf_get_units(dwarf, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
        int tag = dw.dwarf_tag(&cudie);
        if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit) continue;
        lo_unit unit = {.die = dw.dwarf_dieoffset(&cudie)};
        size_t index = result->unit_count;
        int added = 0;
        Dwarf_Addr base, low, high;
        ptrdiff_t offset = 0;
        while ((offset = dw.dwarf_ranges(&cudie, offset, &base, &low, &high)) > 0) {
            if (high <= low) continue;
            lo_unit_range range = {.low = low, .high = high, .unit = index};
            if (append((void **)&result->ranges, &result->range_count, &range_capacity, sizeof range, &range) != 0)
                break;
            added = 1;
        }
        if (added) append((void **)&result->units, &result->unit_count, &unit_capacity, sizeof unit, &unit);
    }
    if (result->range_count == 0) {
        lo_dwarf_close(result);
        return NULL;
    }
    qsort(result->ranges, result->range_count, sizeof *result->ranges, compare_lows);
    return result;
}

void lo_dwarf_close(lo_dwarf *dwarf) {
    if (!dwarf) return;
    for (size_t index = 0; index < dwarf->unit_count; index++) {
        lo_unit *unit = &dwarf->units[index];
        for (size_t function = 0; function < unit->function_count; function++) free(unit->functions[function].inlined);
        free(unit->functions);
    }
    free(dwarf->units);
    free(dwarf->ranges);
    dw.dwarf_end(dwarf->dwarf);
    close(dwarf->fd);
    free(dwarf);
}

typedef struct {
    lo_function_range *items;
    size_t count, capacity;
} lo_function_list;

// Adds the ranges of every function defined under `parent`, not looking inside functions
// (their inlined scopes are walked at lookup time).
static void index_functions(Dwarf_Die *parent, lo_function_list *list, int depth) {
    if (depth > 64) return;
    Dwarf_Die child;
    if (dw.dwarf_child(parent, &child) != 0) return;
    do {
        int tag = dw.dwarf_tag(&child);
        if (tag == DW_TAG_subprogram) {
            Dwarf_Addr base, low, high;
            ptrdiff_t offset = 0;
            while ((offset = dw.dwarf_ranges(&child, offset, &base, &low, &high)) > 0) {
                if (high <= low) continue;
                lo_function_range range = {.low = low, .high = high, .die = dw.dwarf_dieoffset(&child)};
                if (append((void **)&list->items, &list->count, &list->capacity, sizeof range, &range) != 0) return;
            }
        } else if (dw.dwarf_haschildren(&child)) {
            index_functions(&child, list, depth + 1);
        }
    } while (dw.dwarf_siblingof(&child, &child) == 0);
}

static lo_unit *unit_for(lo_dwarf *dwarf, Dwarf_Addr address) {
    long found = find_range(dwarf->ranges, dwarf->range_count, sizeof *dwarf->ranges, address);
    return found < 0 ? NULL : &dwarf->units[dwarf->ranges[found].unit];
}

static lo_function_range *function_for(lo_dwarf *dwarf, lo_unit *unit, Dwarf_Addr address) {
    if (!unit->indexed) {
        unit->indexed = 1;
        Dwarf_Die cudie;
        if (dw.dwarf_offdie(dwarf->dwarf, unit->die, &cudie)) {
            lo_function_list list = {0};
            index_functions(&cudie, &list, 0);
            if (list.count) qsort(list.items, list.count, sizeof *list.items, compare_lows);
            unit->functions = list.items;
            unit->function_count = list.count;
        }
    }
    long found = find_range(unit->functions, unit->function_count, sizeof *unit->functions, address);
    return found < 0 ? NULL : &unit->functions[found];
}

static const char *function_name(Dwarf_Die *die) {
    Dwarf_Attribute attribute;
    if (dw.dwarf_attr_integrate(die, DW_AT_linkage_name, &attribute)
        || dw.dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attribute)
        || dw.dwarf_attr_integrate(die, DW_AT_name, &attribute))
        return dw.dwarf_formstring(&attribute);
    return NULL;
}

static uint32_t clamp_line(int line) { return line > 0 ? (uint32_t)line : 0; }

static void describe_function(Dwarf_Die *die, lo_source_frame *frame) {
    frame->function = function_name(die);
    frame->decl_file = dw.dwarf_decl_file(die);
    int line = 0;
    frame->decl_line = dw.dwarf_decl_line(die, &line) == 0 ? clamp_line(line) : 0;
}

typedef struct {
    lo_inlined_range *items;
    size_t count, capacity;
} lo_inlined_list;

// Lists the ranges of every function inlined under `scope` (looking through lexical blocks).
static void list_inlined(Dwarf_Die *scope, uint32_t depth, lo_inlined_list *list, int level) {
    if (level > 256) return;
    Dwarf_Die child;
    if (dw.dwarf_child(scope, &child) != 0) return;
    do {
        int tag = dw.dwarf_tag(&child);
        if (tag == DW_TAG_inlined_subroutine) {
            Dwarf_Addr base, low, high;
            ptrdiff_t offset = 0;
            while ((offset = dw.dwarf_ranges(&child, offset, &base, &low, &high)) > 0) {
                if (high <= low) continue;
                lo_inlined_range range = {.low = low, .high = high, .die = dw.dwarf_dieoffset(&child), .depth = depth};
                if (append((void **)&list->items, &list->count, &list->capacity, sizeof range, &range) != 0) return;
            }
            if (dw.dwarf_haschildren(&child)) list_inlined(&child, depth + 1, list, level + 1);
        } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_try_block || tag == DW_TAG_catch_block
            || tag == DW_TAG_with_stmt) {
            if (dw.dwarf_haschildren(&child)) list_inlined(&child, depth, list, level + 1);
        }
    } while (dw.dwarf_siblingof(&child, &child) == 0);
}

// Fills chain[1...] with the functions inlined at `address`, outermost first; returns the
// chain's length (chain[0], the function itself, included).
static int inlined_chain(lo_dwarf *dwarf, lo_function_range *function, Dwarf_Addr address, Dwarf_Die *chain, int capacity) {
    if (!function->walked) {
        function->walked = 1;
        lo_inlined_list list = {0};
        list_inlined(&chain[0], 1, &list, 0);
        function->inlined = list.items;
        function->inlined_count = list.count;
    }
    int length = 1;
    for (size_t index = 0; index < function->inlined_count; index++) {
        lo_inlined_range *range = &function->inlined[index];
        // Scopes nest and are listed parent first, so holding scopes come in depth order.
        if (address < range->low || address >= range->high || range->depth != (uint32_t)length) continue;
        if (length >= capacity || !dw.dwarf_offdie(dwarf->dwarf, range->die, &chain[length])) break;
        length += 1;
    }
    return length;
}

int lo_dwarf_lookup(lo_dwarf *dwarf, uint64_t address, lo_source_frame *frames, int capacity) {
    if (!dwarf || !frames || capacity <= 0) return 0;
    lo_unit *unit = unit_for(dwarf, address);
    if (!unit) return 0;
    Dwarf_Die cudie;
    if (!dw.dwarf_offdie(dwarf->dwarf, unit->die, &cudie)) return 0;

    const char *file = NULL;
    uint32_t line = 0, column = 0;
    Dwarf_Line *source = dw.dwarf_getsrc_die(&cudie, address);
    if (source) {
        int number = 0, col = 0;
        dw.dwarf_lineno(source, &number);
        dw.dwarf_linecol(source, &col);
        line = clamp_line(number);
        column = clamp_line(col);
        if (line) file = dw.dwarf_linesrc(source, NULL, NULL);
    }

    lo_function_range *range = function_for(dwarf, unit, address);
    Dwarf_Die function;
    if (!range || !dw.dwarf_offdie(dwarf->dwarf, range->die, &function)) {
        if (!line) return 0;
        frames[0] = (lo_source_frame){.file = file, .line = line, .column = column};
        return 1;
    }
    // chain[0] is the function; chain[1...] the functions inlined into it, outermost first.
    enum { max_depth = 64 };
    Dwarf_Die chain[max_depth];
    chain[0] = function;
    int depth = inlined_chain(dwarf, range, address, chain, max_depth);

    Dwarf_Files *files = NULL;
    size_t file_count = 0;
    if (depth > 1 && dw.dwarf_getsrcfiles(&cudie, &files, &file_count) != 0) files = NULL;

    int written = 0;
    for (int level = depth - 1; level >= 0 && written < capacity; level--) {
        lo_source_frame *frame = &frames[written++];
        *frame = (lo_source_frame){.inlined = level > 0};
        describe_function(&chain[level], frame);
        if (level == depth - 1) {
            frame->file = file;
            frame->line = line;
            frame->column = column;
        } else {
            // The frame's line is where it called the function inlined into it.
            Dwarf_Attribute attribute;
            Dwarf_Word value;
            Dwarf_Die *callee = &chain[level + 1];
            if (dw.dwarf_attr(callee, DW_AT_call_line, &attribute) && dw.dwarf_formudata(&attribute, &value) == 0)
                frame->line = value > UINT32_MAX ? 0 : (uint32_t)value;
            if (dw.dwarf_attr(callee, DW_AT_call_column, &attribute) && dw.dwarf_formudata(&attribute, &value) == 0)
                frame->column = value > UINT32_MAX ? 0 : (uint32_t)value;
            if (files && dw.dwarf_attr(callee, DW_AT_call_file, &attribute) && dw.dwarf_formudata(&attribute, &value) == 0
                && value < file_count)
                frame->file = dw.dwarf_filesrc(files, value, NULL, NULL);
            if (!frame->line) frame->file = NULL;
        }
    }
    return written;
}
