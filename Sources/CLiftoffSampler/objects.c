#include "lo_sampler.h"

#include <link.h>
#include <string.h>

typedef struct lo_visit_state {
    lo_object_visitor visitor;
    void *context;
} lo_visit_state;

static int lo_visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_visit_state *state = data;
    lo_object_info object;
    memset(&object, 0, sizeof object);
    object.name = info->dlpi_name ? info->dlpi_name : "";
    object.base = (uintptr_t)info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && object.segment_count < LO_MAX_SEGMENTS; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD) continue;
        object.segment_start[object.segment_count] = object.base + header->p_vaddr;
        object.segment_end[object.segment_count] = object.base + header->p_vaddr + header->p_memsz;
        object.segment_count++;
    }
    return state->visitor(&object, state->context);
}

void lo_iterate_objects(lo_object_visitor visitor, void *context) {
    lo_visit_state state = {visitor, context};
    dl_iterate_phdr(lo_visit, &state);
}
