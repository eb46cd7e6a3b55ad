// CudaBackend (cuda_backend.h): construction inside the budget, host <-> device copies, and the
// element-wise, norm, RoPE, embedding and KV ops (matmul and attention have their own files).
#include "kernels_cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/core/device_scratch.h"
#include "engine/core/error.h"
#include "engine/core/rope_yarn.h"
#include "kernels_cuda/backend_impl.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr size_t kBulkChunk = 8 * kMiB;   // pinned host chunk of uploads and downloads
constexpr size_t kArgHalf = 256 * 1024;   // half of the op-argument ring

uint64_t device_used_bytes() {
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return total_b - free_b;
}

uint64_t vram_budget(const CudaBackendOptions& o) {
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (o.budget_bytes > 0) {
        if (o.budget_bytes > free_b) {
            throw BudgetError(cat("CUDA backend: a budget of ", o.budget_bytes / kMiB, " MiB does not fit in the ",
                                  free_b / kMiB, " MiB free on device ", o.device, " (", total_b / kMiB,
                                  " MiB total); lower --gpu-mem"));
        }
        return o.budget_bytes;
    }
    if (free_b <= o.reserve_bytes) {
        throw BudgetError(cat("CUDA backend: device ", o.device, " has ", free_b / kMiB,
                              " MiB free, not more than the ", o.reserve_bytes / kMiB, " MiB reserve"));
    }
    return free_b - o.reserve_bytes;
}

// Runs one f32 and one f16 product on a small probe arena, so that whatever cuBLAS allocates
// for itself on first use happens now and can be measured. The probe's memory is freed on
// return; the handle's workspace pointer is replaced before cuBLAS is called again.
void warm_up_cublas(int device, cublasHandle_t cublas, cudaStream_t stream) {
    constexpr int kN = 64;
    DeviceArena probe(device, 8 * kMiB);
    void* ws = probe.allocate(4 * kMiB, "cuBLAS probe workspace");
    auto* a = static_cast<float*>(probe.allocate(kN * kN * sizeof(float) * 3, "cuBLAS probe"));
    auto* h = static_cast<uint8_t*>(probe.allocate(kN * kN * 2 * 2, "cuBLAS probe f16"));
    CUDA_CHECK(cudaMemsetAsync(a, 0, kN * kN * sizeof(float) * 3, stream));
    CUDA_CHECK(cudaMemsetAsync(h, 0, kN * kN * 2 * 2, stream));
    CUBLAS_CHECK(cublasSetWorkspace(cublas, ws, 4 * kMiB));
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, a + kN * kN, kN, &zero,
                             a + 2 * kN * kN, kN));
    CUBLAS_CHECK(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, kN, kN, kN, &one, h, CUDA_R_16F, kN,
                              h + kN * kN * 2, CUDA_R_16F, kN, &zero, a, CUDA_R_32F, kN, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

CudaBackend::Impl::Impl(const CudaBackendOptions& opts) : options(opts) {
    if (options.gemv_rows_per_warp != 1 && options.gemv_rows_per_warp != 2 && options.gemv_rows_per_warp != 4) {
        throw ArgumentError(cat("CUDA backend: gemv_rows_per_warp = ", options.gemv_rows_per_warp,
                                ", expected 1, 2 or 4"));
    }
    if (options.gemv_max_tokens < 0 || options.gemv_max_tokens > kGemvMaxCols) {
        throw ArgumentError(cat("CUDA backend: gemv_max_tokens = ", options.gemv_max_tokens,
                                ", expected 0..", kGemvMaxCols));
    }
    if (options.gemv_chunk_max_tokens < 0 || options.gemv_chunk_max_tokens > kGemvChunkMaxTokens) {
        throw ArgumentError(cat("CUDA backend: gemv_chunk_max_tokens = ", options.gemv_chunk_max_tokens,
                                ", expected 0..", kGemvChunkMaxTokens));
    }
    if (options.gemv_mma_min_tokens < 0 || options.gemv_mma_min_tokens > kGemvMaxCols) {
        throw ArgumentError(cat("CUDA backend: gemv_mma_min_tokens = ", options.gemv_mma_min_tokens,
                                ", expected 0..", kGemvMaxCols));
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || options.device < 0 || options.device >= count) {
        cudaGetLastError();
        throw SystemError(cat("CUDA backend: device ", options.device, " is not available (", count,
                              " CUDA devices visible)"));
    }
    CUDA_CHECK(cudaSetDevice(options.device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
    sm_count = prop.multiProcessorCount;
    compute_major = prop.major;
    smem_optin = prop.sharedMemPerBlockOptin;
    const uint64_t budget = vram_budget(options);
    // cuBLAS allocates device memory of its own (outside any workspace we hand it): measure it
    // and give the arena only the rest of the budget.
    const uint64_t used_before = device_used_bytes();
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
    for (int i = 0; i < Backend::kShipSlots; ++i) {
        CUDA_CHECK(cudaEventCreateWithFlags(&slot_copied[static_cast<size_t>(i)], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&slot_released[static_cast<size_t>(i)], cudaEventDisableTiming));
    }
    CUBLAS_CHECK(cublasCreate(&cublas));
    CUBLAS_CHECK(cublasSetStream(cublas, stream));
    CUBLAS_CHECK(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH));  // no TF32: f32 stays f32
    warm_up_cublas(options.device, cublas, stream);
    const uint64_t used_after = device_used_bytes();
    outside_arena = used_after > used_before ? used_after - used_before : 0;
    if (outside_arena + 16 * kMiB > budget) {
        throw BudgetError(cat("CUDA backend: a budget of ", budget / kMiB, " MiB leaves no arena after the ",
                              outside_arena / kMiB, " MiB cuBLAS holds; raise --gpu-mem"));
    }
    arena = std::make_shared<DeviceArena>(options.device, budget - outside_arena);
    // cuBLAS asks for 32 MiB on Hopper and 4 MiB before it; a small arena gets less.
    const uint64_t ws = std::min<uint64_t>((compute_major >= 9 ? 32 : 4) * kMiB, arena->capacity() / 16);
    cublas_workspace = ArenaBuffer(arena, ws, "cuBLAS workspace");
    CUBLAS_CHECK(cublasSetWorkspace(cublas, cublas_workspace.data(), cublas_workspace.size()));
    bulk = std::make_unique<BulkStaging>(kBulkChunk);
    args = std::make_unique<ArgRing>(arena, kArgHalf);
    timer.reset(OpTimer::from_environment());
}

CudaBackend::Impl::~Impl() {
    if (capturing) {
        cudaGraph_t g = nullptr;
        cudaStreamEndCapture(stream, &g);
        if (g != nullptr) cudaGraphDestroy(g);
    }
    if (graph_exec != nullptr) cudaGraphExecDestroy(graph_exec);
    for (auto& [owner, o] : step.by_owner)
        for (auto& [part, rec] : o.parts)
            if (rec.exec != nullptr) cudaGraphExecDestroy(rec.exec);
    if (stream != nullptr) cudaStreamSynchronize(stream);
    if (copy_stream != nullptr) cudaStreamSynchronize(copy_stream);
    if (timer != nullptr) {
        timer->collect();
        std::fputs(timer->report().c_str(), stderr);
    }
    if (cublas != nullptr) cublasDestroy(cublas);
    args.reset();
    bulk.reset();
    for (cudaEvent_t e : slot_copied)
        if (e != nullptr) cudaEventDestroy(e);
    for (cudaEvent_t e : slot_released)
        if (e != nullptr) cudaEventDestroy(e);
    if (copy_stream != nullptr) cudaStreamDestroy(copy_stream);
    if (stream != nullptr) cudaStreamDestroy(stream);
}

void* CudaBackend::Impl::scratch(ArenaBuffer& buf, uint64_t bytes, std::string_view what) {
    if (buf.size() < bytes) {
        // While a graph is recorded, earlier nodes of it still name the old block: keep it
        // until the graph is launched.
        if (capturing) retired.push_back(std::move(buf));
        buf.reset();
        buf = ArenaBuffer(arena, bytes, what);
        ++scratch_epoch;
    }
    return buf.data();
}

CudaBackend::CudaBackend(const CudaBackendOptions& options) : impl_(std::make_unique<Impl>(options)) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
    capabilities_.device_name = prop.name;
    for (GgmlType t : reference_weight_types()) {
        if (codec_supported(t)) capabilities_.weight_types.push_back(t);
    }
    capabilities_.graphs = true;
    capabilities_.step_graphs = true;
    capabilities_.sparse_ffn = true;
    capabilities_.sparse_activation = true;
    capabilities_.expert_ffn = true;
    capabilities_.op_scratch_bytes = kDeviceOpScratchBytes;  // the runtime reserves it before placing weights
}

BackendMemory CudaBackend::memory() const {
    const Impl& s = *impl_;
    size_t free = 0, total = 0;
    CUDA_CHECK(cudaSetDevice(s.options.device));
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    BackendMemory m;
    m.total_bytes = total;
    m.free_bytes = free;
    m.budget_bytes = s.options.process_budget_bytes > 0 ? s.options.process_budget_bytes : total;
    m.limit_bytes = s.arena->capacity();
    m.used_bytes = s.arena->used();
    m.peak_bytes = s.arena->peak();
    m.context_bytes = s.options.context_bytes;
    m.state_bytes = s.outside_arena;
    return m;
}

CudaBackend::~CudaBackend() = default;

const DeviceArena& CudaBackend::arena() const { return *impl_->arena; }
uint64_t CudaBackend::outside_arena_bytes() const { return impl_->outside_arena; }
const CudaBackendOptions& CudaBackend::options() const { return impl_->options; }

DeviceTensor CudaBackend::allocate(GgmlType type, std::initializer_list<int64_t> ne, std::string_view what) {
    DeviceTensor d;
    d.tensor = Tensor::contiguous(type, nullptr, ne, MemoryKind::Device);
    d.buffer = ArenaBuffer(impl_->arena, d.tensor.n_bytes(), what);
    d.tensor.data = d.buffer.data();
    return d;
}

DeviceTensor CudaBackend::upload(const Tensor& host, std::string_view what) {
    DeviceTensor d;
    d.tensor = host;
    d.tensor.memory = MemoryKind::Device;
    d.buffer = ArenaBuffer(impl_->arena, host.n_bytes(), what);
    d.tensor.data = d.buffer.data();
    copy_to_device(host, d.tensor);
    return d;
}

namespace {

// A copy's operands between host and device: `host` in host memory, `device` on the device,
// both contiguous, of one type and shape; the message names them in the copy's direction.
void check_transfer(std::string_view what, const Tensor& host, const Tensor& device, bool to_device) {
    const Tensor& src = to_device ? host : device;
    const Tensor& dst = to_device ? device : host;
    if (host.memory == MemoryKind::Device || device.memory != MemoryKind::Device) {
        throw ArgumentError(cat(what, to_device ? ": needs a host source and a device destination, got "
                                                : ": needs a device source and a host destination, got ",
                                src.shape_string(), " -> ", dst.shape_string()));
    }
    if (!host.is_contiguous() || !device.is_contiguous() || host.type != device.type || host.ne != device.ne) {
        throw ArgumentError(cat(what, ": ", src.shape_string(), " -> ", dst.shape_string(),
                                " needs two contiguous tensors of one type and shape"));
    }
}

}  // namespace

bool CudaBackend::Impl::upload_on(const Tensor& host, Tensor& device, cudaStream_t on) {
    const bool pinned = host.memory == MemoryKind::PinnedHost;
    if (pinned || is_registered(host.data, host.n_bytes())) {
        // Registered weights do not change while registered: nothing to wait for.
        CUDA_CHECK(cudaMemcpyAsync(device.data, host.data, host.n_bytes(), cudaMemcpyHostToDevice, on));
    } else {
        bulk->to_device(host.data, device.data, host.n_bytes(), on);
    }
    return pinned;
}

void CudaBackend::copy_to_device(const Tensor& host, Tensor& device) {
    impl_->forget_quantized_x();
    check_transfer("copy_to_device", host, device, true);
    if (host.n_bytes() == 0) return;
    // The caller may reuse pinned `host` at once.
    if (impl_->upload_on(host, device, impl_->stream)) CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}

void CudaBackend::download(const Tensor& device, Tensor& host) {
    check_transfer("download", host, device, false);
    if (device.n_bytes() == 0) return;
    impl_->bulk->to_host(device.data, host.data, device.n_bytes(), impl_->stream);
    if (impl_->timer != nullptr) impl_->timer->collect();  // the stream has drained
}

Buffer CudaBackend::allocate(uint64_t bytes, std::string_view what) {
    std::shared_ptr<DeviceArena> arena = impl_->arena;
    void* p = arena->allocate(std::max<uint64_t>(bytes, 1), what);
    return Buffer(p, bytes, MemoryKind::Device, [arena](void* q, uint64_t) { arena->free(q); });
}

void CudaBackend::copy_in(const Tensor& src, Tensor& dst) {
    impl_->forget_quantized_x();
    if (src.is_contiguous()) {
        copy_to_device(src, dst);
        return;
    }
    // A strided source (a column slice of a weight) is gathered on the host in chunks of rows.
    if (src.type != dst.type || src.ne != dst.ne || src.ne[2] != 1 || src.ne[3] != 1 ||
        !dst.is_contiguous() || dst.memory != MemoryKind::Device) {
        throw ArgumentError(cat("copy_in: ", src.shape_string(), " -> ", dst.shape_string(),
                                " needs a 2-D host source and a contiguous device tensor of its shape"));
    }
    const uint64_t rb = src.row_bytes();
    const int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>((kBulkChunk) / std::max<uint64_t>(rb, 1)));
    std::vector<uint8_t> gathered;
    for (int64_t r0 = 0; r0 < src.ne[1]; r0 += chunk_rows) {
        const int64_t rows = std::min(chunk_rows, src.ne[1] - r0);
        Tensor part_src = src.rows(r0, rows);
        gathered.resize(rb * static_cast<uint64_t>(rows));
        Tensor host = Tensor::contiguous(src.type, gathered.data(), {src.ne[0], rows});
        copy_host_tensor(part_src, host);
        Tensor part_dst = dst.rows(r0, rows);
        copy_to_device(host, part_dst);
    }
}

void CudaBackend::copy_out(const Tensor& src, Tensor& dst) { download(src, dst); }

void CudaBackend::ship_in(const Tensor& src, Tensor& dst, int slot) {
    if (slot < 0 || slot >= kShipSlots) throw ArgumentError(cat("ship_in: slot ", slot, " of ", kShipSlots));
    if (!src.is_contiguous() || impl_->capturing) {
        copy_in(src, dst);  // in order on the stream: after every earlier reader of the slot
        return;
    }
    check_transfer("ship_in", src, dst, true);
    if (src.n_bytes() == 0) return;
    const auto s = static_cast<size_t>(slot);
    cudaStream_t copies = impl_->copy_stream;
    CUDA_CHECK(cudaStreamWaitEvent(copies, impl_->slot_released[s], 0));
    const bool pinned = impl_->upload_on(src, dst, copies);
    CUDA_CHECK(cudaEventRecord(impl_->slot_copied[s], copies));
    CUDA_CHECK(cudaStreamWaitEvent(impl_->stream, impl_->slot_copied[s], 0));
    // Pinned memory is the caller's to reuse (a disk read's buffer): wait until it was read.
    if (pinned) CUDA_CHECK(cudaEventSynchronize(impl_->slot_copied[s]));
}

void CudaBackend::release_slot(int slot) {
    if (slot < 0 || slot >= kShipSlots) throw ArgumentError(cat("release_slot: slot ", slot, " of ", kShipSlots));
    if (impl_->capturing) return;  // ship_in copies in order while recording
    CUDA_CHECK(cudaEventRecord(impl_->slot_released[static_cast<size_t>(slot)], impl_->stream));
}

bool CudaBackend::Impl::is_registered(const void* p, uint64_t bytes) const {
    const auto begin = reinterpret_cast<uintptr_t>(p);
    auto it = registered.upper_bound(begin);
    if (it == registered.begin()) return false;
    --it;
    return begin >= it->first && begin + bytes <= it->second;
}

Buffer CudaBackend::register_host_memory(const void* p, uint64_t bytes) {
    if (p == nullptr || bytes == 0) return {};
    void* q = const_cast<void*>(p);
    // Read-only: the weights are a read-only file mapping (default flags refuse one).
    if (cudaHostRegister(q, bytes, cudaHostRegisterReadOnly) != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky: clear it, copies of this range stay staged
        return {};
    }
    const auto begin = reinterpret_cast<uintptr_t>(p);
    impl_->registered[begin] = begin + bytes;
    Impl* impl = impl_.get();
    return Buffer(q, bytes, MemoryKind::PinnedHost, [impl, begin](void* r, uint64_t) {
        impl->registered.erase(begin);
        (void)cudaHostUnregister(r);
    });
}

void CudaBackend::synchronize() {
    CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
    if (impl_->timer != nullptr) impl_->timer->collect();
}

// ---- ops

void CudaBackend::get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("get_rows");
    check_device_rows("get_rows", "table", table);
    check_device_f32("get_rows", "out", out);
    if (!codec_supported(table.type)) {
        throw UnsupportedError(cat("get_rows: table type ", type_traits(table.type).name,
                                   " is not supported on the CUDA backend"));
    }
    if (table.ne[2] != 1 || table.ne[3] != 1) {
        throw ArgumentError(cat("get_rows: table must be 2-D, got ", table.shape_string()));
    }
    if (n < 0 || out.ne[0] != table.ne[0] || out.n_rows() != n) {
        throw ArgumentError(cat("get_rows: out ", out.shape_string(), " must be [", table.ne[0], ", ", n,
                                "] for ", n, " ids of table ", table.shape_string()));
    }
    if (n == 0) return;
    if (ids == nullptr || impl_->arena->owns(ids)) {
        throw ArgumentError("get_rows: ids must be a host array");
    }
    for (int64_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= table.ne[1]) {
            throw ArgumentError(cat("get_rows: id ", ids[i], " at index ", i, " is outside the table's ",
                                    table.ne[1], " rows (", table.shape_string(), ")"));
        }
    }
    cuda::get_rows(table.type, static_cast<const uint8_t*>(table.data), table.nb[1], table.ne[0],
                   impl_->stage(ids, n), n, f32_view(out), impl_->stream);
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("rms_norm");
    check_device_f32("rms_norm", "x", x);
    check_device_f32("rms_norm", "y", y);
    check_same_shape("rms_norm", "x", x, "y", y);
    const float* w = nullptr;
    if (weight != nullptr) {
        check_device_f32("rms_norm", "weight", *weight);
        if (weight->n_elements() != x.ne[0] || !weight->is_contiguous()) {
            throw ArgumentError(cat("rms_norm: weight ", weight->shape_string(), " must hold ", x.ne[0],
                                    " contiguous elements to match rows of x ", x.shape_string()));
        }
        w = weight->as<const float>();
    }
    if (!(eps >= 0.0f)) throw ArgumentError(cat("rms_norm: eps = ", eps, ", expected >= 0"));
    // Decode rows: y is quantized for the q8 GEMV in the same kernel (the next matmul reuses it).
    Impl& s = *impl_;
    const Impl::Q8Scratch q8 = s.fuse_q8(y) ? s.q8_scratch(y.n_rows(), y.ne[0]) : Impl::Q8Scratch{nullptr, nullptr, nullptr};
    if (cuda::rms_norm(f32_view(x), w, eps, f32_view(y), q8.xq, q8.xds, s.stream)) {
        s.quantized_x = Impl::QuantizedX{true, y.data, y.ne, y.nb, q8.buf};
    }
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("add");
    check_device_f32("add", "a", a);
    check_device_f32("add", "b", b);
    check_device_f32("add", "y", y);
    check_same_shape("add", "a", a, "y", y);
    const bool broadcast = b.ne != a.ne;
    if (broadcast && (b.ne[0] != a.ne[0] || b.n_rows() != 1)) {
        throw ArgumentError(cat("add: b ", b.shape_string(), " must match a ", a.shape_string(),
                                " or be one row of ", a.ne[0], " elements"));
    }
    cuda::add(f32_view(a), f32_view(b), broadcast, f32_view(y), impl_->stream);
}

void CudaBackend::scale(Tensor& x, float s) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("scale");
    check_device_f32("scale", "x", x);
    cuda::scale(f32_view(x), s, impl_->stream);
}

void CudaBackend::combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("combine_rows");
    check_device_f32("combine_rows", "x", x);
    check_device_f32("combine_rows", "y", y);
    for (const void* p : {static_cast<const void*>(c.offsets), static_cast<const void*>(c.rows),
                          static_cast<const void*>(c.weights)}) {
        if (p != nullptr && impl_->arena->owns(p)) throw ArgumentError("combine_rows: offsets, rows and weights must be host arrays");
    }
    check_combine_rows(x, c, y);
    const int64_t n = y.ne[1], entries = c.offsets[n];
    const int32_t* offsets = impl_->stage(c.offsets, n + 1);
    const int32_t* rows = entries > 0 ? impl_->stage(c.rows, entries) : nullptr;
    const float* weights = entries > 0 ? impl_->stage(c.weights, entries) : nullptr;
    cuda::combine_rows(f32_view(x), offsets, rows, weights, f32_view(y), false, impl_->stream);
}

void CudaBackend::softcap(Tensor& x, float cap) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("softcap");
    check_device_f32("softcap", "x", x);
    if (!(cap > 0.0f)) throw ArgumentError(cat("softcap: cap = ", cap, ", expected > 0"));
    cuda::softcap(f32_view(x), cap, impl_->stream);
}

void CudaBackend::gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("gated_activation");
    check_device_f32("gated_activation", "gate", gate);
    check_device_f32("gated_activation", "up", up);
    check_device_f32("gated_activation", "y", y);
    check_same_shape("gated_activation", "gate", gate, "up", up);
    check_same_shape("gated_activation", "gate", gate, "y", y);
    if (act != Activation::Silu && act != Activation::GeluTanh) {
        throw UnsupportedError(cat("gated_activation: activation id ", static_cast<int>(act),
                                   " is not supported on the CUDA backend"));
    }
    Impl& s = *impl_;
    const Impl::Q8Scratch q8 = s.fuse_q8(y) ? s.q8_scratch(y.n_rows(), y.ne[0]) : Impl::Q8Scratch{nullptr, nullptr, nullptr};
    if (cuda::gated_activation(f32_view(gate), f32_view(up), act, f32_view(y), q8.xq, q8.xds, s.stream)) {
        s.quantized_x = Impl::QuantizedX{true, y.data, y.ne, y.nb, q8.buf};
    }
}

void CudaBackend::rope(Tensor& x, const int32_t* positions, const RopeParams& p) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("rope");
    check_device_f32("rope", "x", x);
    if (x.ne[3] != 1) {
        throw ArgumentError(cat("rope: x must be [head_dim, n_heads, n_tokens], got ", x.shape_string()));
    }
    const RopeLaunch launch = impl_->rope_launch(positions, x.ne[2], x.ne[0], p);
    if (x.ne[2] == 0 || x.ne[1] == 0) return;
    cuda::rope(f32_view(x), x.ne[1], launch, impl_->stream);
}

RopeLaunch CudaBackend::Impl::rope_launch(const int32_t* positions, int64_t n_tokens, int64_t head_dim,
                                          const RopeParams& p) {
    if (p.n_rot <= 0 || p.n_rot % 2 != 0 || p.n_rot > head_dim) {
        throw ArgumentError(cat("rope: n_rot = ", p.n_rot, " must be even and in (0, head_dim = ", head_dim, "]"));
    }
    if (!(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f)) {
        throw ArgumentError(cat("rope: freq_base = ", p.freq_base, " and freq_scale = ", p.freq_scale,
                                " must be > 0"));
    }
    RopeLaunch launch;
    if (n_tokens == 0) return launch;
    if (positions == nullptr || arena->owns(positions)) {
        throw ArgumentError("rope: positions must be a host array");
    }
    const int half = p.n_rot / 2;
    // The same float powers as the CPU backend, so both rotate by identical angles.
    std::vector<float> inv_freq(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) {
        inv_freq[static_cast<size_t>(i)] =
            std::pow(p.freq_base, -2.0f * static_cast<float>(i) / static_cast<float>(p.n_rot));
    }
    launch.positions = stage(positions, n_tokens);
    launch.inv_freq = stage(inv_freq.data(), half);
    if (p.freq_factors != nullptr) {
        launch.freq_factors = arena->owns(p.freq_factors, sizeof(float) * static_cast<uint64_t>(half))
                                  ? p.freq_factors
                                  : stage(p.freq_factors, half);
    }
    launch.freq_scale = p.freq_scale;
    check_rope_yarn(p);
    const std::vector<float> ramp = rope_yarn_ramp(p);
    if (p.ext_factor != 0.0f) launch.yarn_ramp = stage(ramp.data(), half);
    launch.mscale = rope_magnitude(p);
    launch.n_rot = p.n_rot;
    launch.neox = p.style == RopeStyle::Neox;
    return launch;
}

void CudaBackend::kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) {
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op("kv_store");
    check_device_f32("kv_store", "src", src);
    check_device_rows("kv_store", "cache", cache);
    if (!kv_store_supported(cache.type)) {
        throw UnsupportedError(cat("kv_store: cache type ", type_traits(cache.type).name,
                                   " is not supported on the CUDA backend (f32, f16, bf16, q8_0, q4_0, "
                                   "q5_0 are)"));
    }
    check_kv_store_shapes(src, cache, first_cell);
    const int64_t n = src.n_rows();
    KvStoreLaunch c;
    c.cache = static_cast<uint8_t*>(cache.data);
    c.nb1 = cache.nb[1];
    c.cells = cache.ne[1];
    c.type = cache.type;
    cuda::kv_store(f32_view(src), c, first_cell, impl_->step_cell(first_cell, n), impl_->stream);
}

void CudaBackend::kv_store_rows(const Tensor& k, const Tensor& v, std::span<const SequenceKv> seqs) {
    check_sequence_rows("kv_store_rows", k, 1, seqs);
    check_sequence_rows("kv_store_rows", v, 1, seqs);
    const Tensor& k0 = *seqs.front().k_cache;
    const Tensor& v0 = *seqs.front().v_cache;
    bool one = kv_store_supported(k0.type) && kv_store_supported(v0.type);
    const size_t n = seqs.size();
    std::vector<const uint8_t*>& caches = impl_->seq_caches;
    std::vector<int32_t>& positions = impl_->seq_positions;
    caches.resize(2 * n);
    positions.resize(n);
    for (size_t i = 0; i < n && one; ++i) {
        one = caches_alike(*seqs[i].k_cache, k0) && caches_alike(*seqs[i].v_cache, v0);
        caches[i] = static_cast<const uint8_t*>(seqs[i].k_cache->data);
        caches[n + i] = static_cast<const uint8_t*>(seqs[i].v_cache->data);
        positions[i] = seqs[i].position;
    }
    if (!one) return Backend::kv_store_rows(k, v, seqs);
    impl_->forget_quantized_x();
    for (size_t i = 0; i < n; ++i) {  // each row's own checks, as kv_store() makes them
        check_device_rows("kv_store_rows", "cache", *seqs[i].k_cache);
        check_device_rows("kv_store_rows", "cache", *seqs[i].v_cache);
        check_kv_store_shapes(k.rows(static_cast<int64_t>(i), 1), *seqs[i].k_cache, seqs[i].position);
        check_kv_store_shapes(v.rows(static_cast<int64_t>(i), 1), *seqs[i].v_cache, seqs[i].position);
    }
    check_device_f32("kv_store_rows", "k", k);
    check_device_f32("kv_store_rows", "v", v);
    const OpScope timed = impl_->time_op("kv_store (sequences)");
    auto* const* dev = static_cast<uint8_t* const*>(impl_->stage_bytes(caches.data(), 2 * n * sizeof(caches[0])));
    const int32_t* pos = impl_->stage(positions.data(), static_cast<int64_t>(n));
    for (int part = 0; part < 2; ++part) {
        const Tensor& src = part == 0 ? k : v;
        const Tensor& first = part == 0 ? k0 : v0;
        KvStoreLaunch c;
        c.cache = static_cast<uint8_t*>(first.data);
        c.nb1 = first.nb[1];
        c.cells = first.ne[1];
        c.type = first.type;
        c.row_cache = dev + part * n;
        c.row_position = pos;
        cuda::kv_store(f32_view(src), c, 0, nullptr, impl_->stream);
    }
}

}  // namespace strata::cuda
