// The code and constants of loaded objects made resident ahead of their
// first use (the executable's warm start, issue 24): a fresh process takes
// a page fault on each code page it first runs (about 40 % of a small
// program's first run on the shared build VM), which a thread with nothing
// else to do can take instead.
#ifndef HL_RUNTIME_BASE_CODE_PAGES_H_
#define HL_RUNTIME_BASE_CODE_PAGES_H_

#include <stdatomic.h>

// Maps the read-only segments (code, constants) of each loaded object that
// holds one of the anchors (addresses of a function or datum in it; NULL
// ones are skipped) by reading a byte of every page, in the anchors' order,
// until *stop is set (checked every 64 KiB). Writable segments are left
// alone (their pages are per process: touching them is the user's to do).
void hl_code_pages_touch(const void *const *anchors, int count, const atomic_bool *stop);

#endif  // HL_RUNTIME_BASE_CODE_PAGES_H_
