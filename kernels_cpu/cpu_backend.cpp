// CpuBackend (cpu_backend.h): forwards each op to its CPU body in ops.h with the thread count.
#include "kernels_cpu/cpu_backend.h"

#include "engine/core/host_info.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/predicted_ffn.h"
#include "kernels_cpu/qdot.h"
#include "quant/ggml_type.h"

namespace strata::cpu {

CpuBackend::CpuBackend(int n_threads) : CpuBackend(CpuBackendOptions{n_threads}) {}

CpuBackend::CpuBackend(const CpuBackendOptions& options)
    : n_threads_(resolve_threads(options.n_threads)), options_(options) {
    capabilities_.device_name = cpu_model_name();
    capabilities_.weight_types = reference_weight_types();
    capabilities_.kernel_revisions = qdot_kernel_revisions();
    capabilities_.sparse_ffn = true;
    capabilities_.sparse_activation = true;
    capabilities_.predicted_ffn = true;
    capabilities_.input_mask = true;
    capabilities_.input_major = true;
    capabilities_.expert_ffn = true;
    capabilities_.host_threads = n_threads_;
}

void CpuBackend::matmul(const Tensor& w, const Tensor& x, Tensor& y) {
    const CpuOpScope timed(times_, "matmul", type_traits(w.type).name, x.n_rows() > 1 ? " batch" : "");
    cpu::matmul(w, x, y, n_threads_,
                MatmulOptions{.quantize_activations = options_.quantize_activations,
                              .dnnl_min_rows = options_.dnnl_min_rows,
                              .dnnl_require_amx = options_.dnnl_require_amx});
}

void CpuBackend::get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) {
    const CpuOpScope timed(times_, "get_rows", type_traits(table.type).name);
    cpu::get_rows(table, ids, n, out, n_threads_);
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) {
    const CpuOpScope timed(times_, "rms_norm");
    cpu::rms_norm(x, weight, eps, y, n_threads_);
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
    const CpuOpScope timed(times_, "add");
    cpu::add(a, b, y, n_threads_);
}

void CpuBackend::scale(Tensor& x, float s) {
    const CpuOpScope timed(times_, "scale");
    cpu::scale(x, s, n_threads_);
}

void CpuBackend::combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) {
    const CpuOpScope timed(times_, "combine_rows");
    cpu::combine_rows(x, c, y, n_threads_);
}

void CpuBackend::gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) {
    const CpuOpScope timed(times_, "gated_activation");
    cpu::gated_activation(gate, up, act, y, n_threads_);
}

void CpuBackend::rope(Tensor& x, const int32_t* positions, const RopeParams& params) {
    const CpuOpScope timed(times_, "rope");
    cpu::rope(x, positions, params, n_threads_);
}

void CpuBackend::kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) {
    const CpuOpScope timed(times_, "kv_store", type_traits(cache.type).name);
    cpu::kv_store(src, cache, first_cell, n_threads_);
}

void CpuBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           int64_t n_cells, const int32_t* positions, const AttentionParams& params,
                           Tensor& out) {
    const CpuOpScope timed(times_, "attention", type_traits(k_cache.type).name);
    cpu::attention(q, k_cache, v_cache, n_cells, positions, params, out, n_threads_);
}

void CpuBackend::softcap(Tensor& x, float cap) {
    const CpuOpScope timed(times_, "softcap");
    cpu::softcap(x, cap, n_threads_);
}

int64_t CpuBackend::thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act,
                                                 float threshold, Tensor& y) {
    const CpuOpScope timed(times_, "thresholded_gated_activation");
    return cpu::thresholded_gated_activation(gate, up, act, threshold, y, n_threads_);
}

int64_t CpuBackend::sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) {
    const CpuOpScope timed(times_, "sparse_gated_ffn");
    return cpu::sparse_gated_ffn(args, y, n_threads_, options_.quantize_activations);
}

void CpuBackend::expert_ffn(const ExpertFfnArgs& args, Tensor& y) {
    const CpuOpScope timed(times_, "expert_ffn");
    cpu::expert_ffn(args, y, n_threads_, options_.quantize_activations);
}

bool CpuBackend::routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const {
    (void)act;
    return n_used >= 1 && n_used <= static_cast<int64_t>(experts.size());
}

void CpuBackend::routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) {
    const CpuOpScope timed(times_, "routed_expert_ffn");
    cpu::routed_expert_ffn(args, y, n_threads_, options_.quantize_activations);
}

int64_t CpuBackend::mask_small_values(Tensor& x, float threshold) {
    const CpuOpScope timed(times_, "mask_small_values");
    return cpu::mask_small_values(x, threshold, n_threads_);
}

void CpuBackend::input_major_matvec(const InputMajorQ4K& w, const Tensor& x, Tensor& y) {
    const CpuOpScope timed(times_, "input_major_matvec");
    cpu::input_major_matvec(w, x, y, n_threads_);
}

int64_t CpuBackend::sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) {
    const CpuOpScope timed(times_, "sparse_gated_activation");
    return cpu::sparse_gated_activation(args, h, n_threads_, options_.quantize_activations);
}

int64_t CpuBackend::predicted_sparse_gated_ffn(const PredictedFfnArgs& args, Tensor& y) {
    const CpuOpScope timed(times_, "predicted_sparse_gated_ffn");
    return cpu::predicted_sparse_gated_ffn(args, y, n_threads_, options_.quantize_activations);
}

}  // namespace strata::cpu
