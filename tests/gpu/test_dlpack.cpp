// DLPack on the GPU: device tensors leave and enter Loom without a copy, pinned and managed memory map to
// the host and to their device, and the stream handshake orders the consumer's stream after the producer's.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "loom/loom.hpp"
#include "loom/runtime/errors.hpp"

using namespace loom;

TEST_CASE("dlpack on the GPU: a device tensor round-trips through DLPack with the same pointer") {
    const Tensor x = Array(arange(0, 4096, 1, float32, Device::cuda())) * 0.5;
    Stream consumer;
    DLManagedTensor* m = x.to_dlpack(consumer.get());  // the consumer's stream waits for Loom's kernel
    CHECK(m->dl_tensor.device.device_type == kDLCUDA);
    CHECK(m->dl_tensor.device.device_id == x.device().index);
    CHECK(m->dl_tensor.data == x.data());
    // Back into Loom as if from another library, produced on `consumer`: Loom's stream waits for it.
    const Tensor y = from_dlpack(m, consumer.get());
    CHECK(y.device() == x.device());
    CHECK(y.data() == x.data());
    assign(y, Array(y) + 1.0);  // in place, on Loom's current stream
    const std::vector<float> v = x.to_vector<float>();
    CHECK(v[0] == 1.0f);
    CHECK(v[4095] == 2048.5f);
}

TEST_CASE("dlpack on the GPU: every dtype of a device tensor, and the deleter after the last handle") {
    for (const DType dt : kAllDTypes) {
        CAPTURE(name(dt));
        const Tensor x = testing::random_tensor({33, 65}, dt, 3).to(Device::cuda());
        DLManagedTensor* m = x.to_dlpack();
        const Tensor y = from_dlpack(m);
        CHECK(y.data() == x.data());
        const Tensor a = y.to_host(), b = x.to_host();
        CHECK(std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
    }
    int deleted = 0;
    {
        Tensor x = Tensor::empty({256}, float32, Device::cuda());
        DLManagedTensor* m = x.to_dlpack();
        struct Counting {
            DLManagedTensor* inner;
            int* count;
        };
        // A producer that wraps Loom's export and counts its own deletion.
        auto* wrapper = new DLManagedTensor(*m);
        wrapper->manager_ctx = new Counting{m, &deleted};
        wrapper->deleter = [](DLManagedTensor* self) {
            auto* c = static_cast<Counting*>(self->manager_ctx);
            ++*c->count;
            c->inner->deleter(c->inner);
            delete c;
            delete self;
        };
        x = Tensor();
        Tensor t = from_dlpack(wrapper);
        const Tensor view = t.slice({{10, 20}});
        t = Tensor();
        CHECK(deleted == 0);
        assign(view, Array(view) * 0.0);
        synchronize();
    }
    CHECK(deleted == 1);
}

TEST_CASE("dlpack on the GPU: pinned host memory is a host tensor, managed memory its device's") {
    void* pinned_bytes = nullptr;
    LOOM_CUDA_CHECK(cudaMallocHost(&pinned_bytes, 64 * sizeof(float)));
    auto* pinned = static_cast<float*>(pinned_bytes);
    std::int64_t shape[1] = {64};
    DLManagedTensor m{};
    m.dl_tensor = DLTensor{pinned, {kDLCUDAHost, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    for (int i = 0; i < 64; ++i) pinned[i] = static_cast<float>(i);
    const Tensor h = from_dlpack(&m, current_stream());  // the host waits for that stream
    CHECK(h.device() == Device::cpu());
    CHECK(Tensor(Array(h) * 2.0).to_vector<float>()[63] == 126.0f);
    void* managed_bytes = nullptr;
    LOOM_CUDA_CHECK(cudaMallocManaged(&managed_bytes, 64 * sizeof(float)));
    auto* managed = static_cast<float*>(managed_bytes);
    LOOM_CUDA_CHECK(cudaMemset(managed, 0, 64 * sizeof(float)));
    LOOM_CUDA_CHECK(cudaDeviceSynchronize());
    DLManagedTensor mm{};
    mm.dl_tensor = DLTensor{managed, {kDLCUDAManaged, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    {
        const Tensor d = from_dlpack(&mm);
        CHECK(d.device() == Device::cuda(current_device()));
        assign(d, Array(d) + 3.0);
        synchronize();
    }
    CHECK(managed[63] == 3.0f);
    LOOM_CUDA_CHECK(cudaFree(managed));
    LOOM_CUDA_CHECK(cudaFreeHost(pinned));
}
