// The identity of a model file that a placement is made for: cheap to compute for a 40 GiB
// model, and different for any other file in practice.
#pragma once

#include <string>
#include <vector>

#include "offload/placement.h"

namespace strata {

// How many leading bytes of each shard the fingerprint hashes. A GGUF header (metadata,
// vocabulary, tensor table) lies well within it, so any change of shapes, types, names or
// metadata changes the hash; the rest of the file is covered by its size only.
inline constexpr uint64_t kFingerprintPrefixBytes = 16ull << 20;

// file_bytes: the sizes of all shards added up. header_hash: 32 hex digits, two independent
// 64-bit hashes over, for each shard in order, its size and its first
// min(size, kFingerprintPrefixBytes) bytes. Reads with pread; SystemError (with the path and the
// OS reason) when a file cannot be opened or read. ArgumentError on an empty list.
ModelFingerprint fingerprint_file(const std::vector<std::string>& shard_paths);

}  // namespace strata
