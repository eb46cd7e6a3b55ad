// The builders of the backend-ops table, one per family of Backend operations
// (backend_ops_cases.cpp, backend_ops_attention.cpp, backend_ops_fused.cpp); all_cases() calls each once.
#pragma once

#include <vector>

#include "tests/kernels_cpu/backend_ops.h"

namespace strata::backend_ops {

void add_matmul_cases(std::vector<OpCase>& out);     // every weight type x 5 shape classes
void add_get_rows_cases(std::vector<OpCase>& out);   // every weight type
void add_row_op_cases(std::vector<OpCase>& out);     // rms_norm, add, scale, softcap, gated
void add_rope_cases(std::vector<OpCase>& out);       // NORM / NEOX, partial rotation, factors
void add_kv_cases(std::vector<OpCase>& out);         // kv_store per KV type
void add_attention_cases(std::vector<OpCase>& out);  // attention per KV type and head layout
void add_sparse_cases(std::vector<OpCase>& out);     // thresholded activation, sparse FFN
void add_expert_cases(std::vector<OpCase>& out);     // expert_ffn per type pair, mixed, chunked
void add_routed_expert_cases(std::vector<OpCase>& out);  // routed_expert_ffn: top-k on the backend
void add_fused_cases(std::vector<OpCase>& out);          // add_rms_norm, attention_prologue

}  // namespace strata::backend_ops
