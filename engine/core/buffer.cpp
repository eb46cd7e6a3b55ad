// Backend-owned allocations (buffer.h).
#include "engine/core/buffer.h"

#include <utility>

#include "engine/core/error.h"

namespace strata {

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        reset();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        memory_ = other.memory_;
        release_ = std::move(other.release_);
        other.release_ = nullptr;
    }
    return *this;
}

void Buffer::reset() {
    if (data_ != nullptr && release_) release_(data_, size_);
    data_ = nullptr;
    size_ = 0;
    release_ = nullptr;
}

Tensor Buffer::tensor(GgmlType type, std::initializer_list<int64_t> ne) const {
    Tensor t = Tensor::contiguous(type, data_, ne, memory_);
    if (t.n_bytes() > size_) {
        throw ArgumentError(cat("a tensor ", t.shape_string(), " of ", t.n_bytes(),
                                " bytes does not fit in a buffer of ", size_, " bytes"));
    }
    return t;
}

}  // namespace strata
