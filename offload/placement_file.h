// The placement file: a Placement as JSON, so that a plan made once (by the planner or by hand)
// can be reviewed, edited and reused. docs/PLACEMENT.md documents every field.
#pragma once

#include <string>
#include <string_view>

#include "offload/placement.h"

namespace strata {

// The JSON text of `placement` (schema_version Placement::kSchemaVersion), one tensor per line.
// With a table, it also writes a "bytes" summary per tier (weights, and the KV cache at n_ctx)
// for people reading the file; readers ignore it.
std::string placement_to_json(const Placement& placement, const TensorTable* table = nullptr);

// Parses a placement file's text. FormatError, naming the JSON path ("$.tensors[3].tier") and
// what was expected, on invalid JSON, a missing or wrong-typed field, an unknown tier or type
// name, or a schema_version other than Placement::kSchemaVersion. Checks structure only:
// check_placement (placement.h) checks it against a model.
Placement placement_from_json(std::string_view text);

// File versions of the two above. SystemError when the file cannot be written or read;
// read_placement's FormatError messages start with the path.
void write_placement(const Placement& placement, const std::string& path,
                     const TensorTable* table = nullptr);
Placement read_placement(const std::string& path);

}  // namespace strata
