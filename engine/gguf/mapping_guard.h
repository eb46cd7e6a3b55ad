// A model file that shrinks while it is mapped (overwritten, truncated by another program) makes
// the next read of a lost page raise SIGBUS. The guard turns that into one clear error line and
// exit status 1 instead of a crash: each mapping registers its range and file, and a SIGBUS inside
// a registered range names the file and the offset. A SIGBUS elsewhere keeps its default action.
// Registration is thread-safe; the handler only reads.
#pragma once

#include <cstddef>
#include <string>

namespace strata {

// Returns a slot for unguard_mapping, or -1 when every slot is taken (the mapping is then
// unguarded, never refused).
int guard_mapping(const void* base, size_t size, const std::string& path);
void unguard_mapping(int slot);

}  // namespace strata
