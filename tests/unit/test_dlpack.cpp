// DLPack on the host: from_dlpack() and Tensor::to_dlpack() round-trip host tensors of every dtype without a
// copy, each deleter runs exactly once, strides and byte_offset map as DLPack defines them, and what Loom
// cannot take is a loom::Error naming from_dlpack(), the dtype or device, and the caller's line.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "error_message.hpp"

using namespace loom;

namespace {

// A producer's tensor: its own shape, strides and memory, and a deleter that counts its calls.
struct Producer {
    std::vector<std::int64_t> shape, strides;
    std::vector<std::uint64_t> memory;  // 8-byte aligned
    DLManagedTensor managed{};
    int deleted = 0;

    Producer(std::vector<std::int64_t> shp, DLDataType dtype, std::vector<std::int64_t> str = {},
             std::size_t words = 64)
        : shape(std::move(shp)), strides(std::move(str)), memory(words) {
        DLTensor& t = managed.dl_tensor;
        t.data = memory.data();
        t.device = {kDLCPU, 0};
        t.ndim = static_cast<int>(shape.size());
        t.dtype = dtype;
        t.shape = shape.data();
        t.strides = strides.empty() ? nullptr : strides.data();
        t.byte_offset = 0;
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) { ++static_cast<Producer*>(self->manager_ctx)->deleted; };
    }
    float* floats() { return reinterpret_cast<float*>(memory.data()); }
};

DLDataType dl(std::uint8_t code, int bits, int lanes = 1) {
    return DLDataType{code, static_cast<std::uint8_t>(bits), static_cast<std::uint16_t>(lanes)};
}

std::string from_dlpack_error(Producer& p) {
    const std::string msg = loom_test::error_message([&] { (void)from_dlpack(&p.managed); });
    CHECK(p.deleted == 0);  // a refused tensor stays the caller's
    return msg;
}

}  // namespace

TEST_CASE("dlpack: host tensors of every dtype round-trip without a copy") {
    for (const DType dt : kAllDTypes) {
        CAPTURE(name(dt));
        const Tensor src = testing::random_tensor({5, 7}, dt, 11);
        DLManagedTensor* m = src.to_dlpack();
        REQUIRE(m != nullptr);
        const DLTensor& t = m->dl_tensor;
        CHECK(t.data == src.data());
        CHECK(t.device.device_type == kDLCPU);
        CHECK(t.ndim == 2);
        CHECK(t.shape[0] == 5);
        CHECK(t.shape[1] == 7);
        CHECK(t.strides[0] == 7);
        CHECK(t.strides[1] == 1);
        CHECK(t.byte_offset == 0);
        CHECK(t.dtype.lanes == 1);
        CHECK(t.dtype.bits == 8 * itemsize(dt));
        const Tensor back = from_dlpack(m);  // Loom owns m now; its deleter frees the export
        CHECK(back.dtype() == dt);           // bool too, as kDLBool, with any header
        CHECK(back.data() == src.data());
        CHECK(back.shape() == src.shape());
        CHECK(back.strides() == src.strides());
        CHECK(back.device() == Device::cpu());
        CHECK(std::memcmp(back.data(), src.data(), src.nbytes()) == 0);
    }
}

TEST_CASE("dlpack: dtype codes, bfloat16 and bool included") {
    CHECK(dlpack::dtype_to_dlpack(bfloat16).code == kDLBfloat);
    CHECK(dlpack::dtype_to_dlpack(float16).code == kDLFloat);
    CHECK(dlpack::dtype_to_dlpack(bool_).code == dlpack::kBoolCode);  // kDLBool, also with DLPack 0.6
    CHECK(dlpack::dtype_to_dlpack(bool_).bits == 8);
    CHECK(dlpack::dtype_from_dlpack(dl(dlpack::kBoolCode, 8)) == bool_);  // code 6 with any header
    CHECK(dlpack::dtype_from_dlpack(dl(kDLBfloat, 16)) == bfloat16);
    CHECK(dlpack::dtype_from_dlpack(dl(kDLUInt, 8)) == uint8);
    for (const DType dt : kAllDTypes)
        CHECK(dlpack::dtype_from_dlpack(dlpack::dtype_to_dlpack(dt)).has_value());
    CHECK_FALSE(dlpack::dtype_from_dlpack(dl(kDLFloat, 32, 4)).has_value());
    CHECK_FALSE(dlpack::dtype_from_dlpack(dl(kDLUInt, 16)).has_value());
    CHECK_FALSE(dlpack::dtype_from_dlpack(dl(kDLComplex, 64)).has_value());
    CHECK_FALSE(dlpack::dtype_from_dlpack(dl(kDLInt, 16)).has_value());
}

TEST_CASE("dlpack: from_dlpack's deleter runs exactly once, after the last view") {
    Producer p({4, 6}, dl(kDLFloat, 32));
    for (int i = 0; i < 24; ++i) p.floats()[i] = static_cast<float>(i);
    {
        Tensor t = from_dlpack(&p.managed);
        CHECK(t.data() == p.memory.data());
        const Tensor column = t.slice({{}, {2, 3}});  // views share the producer's memory
        t = Tensor();
        CHECK(p.deleted == 0);
        CHECK(column.to_vector<float>() == std::vector<float>{2, 8, 14, 20});
        const Tensor doubled = Array(column) * 2.0;  // host evaluation reads it in place
        CHECK(doubled.to_vector<float>() == std::vector<float>{4, 16, 28, 40});
        CHECK(p.deleted == 0);
    }
    CHECK(p.deleted == 1);
}

TEST_CASE("dlpack: to_dlpack keeps Loom's memory alive until the consumer's deleter") {
    DLManagedTensor* m = nullptr;
    {
        const Tensor t = Array(arange(0, 10, 1, float32, Device::cpu())) * 3.0;
        m = t.to_dlpack();
    }  // the last Loom handle is gone
    const float* v = static_cast<const float*>(m->dl_tensor.data);
    CHECK(v[9] == 27.0f);
    m->deleter(m);
}

TEST_CASE("dlpack: strides in elements, negative strides, byte_offset and null strides") {
    // A transposed producer view: strides (1, 4) over a row-major 4 x 3 block.
    Producer t({3, 4}, dl(kDLFloat, 32), {1, 3});
    for (int i = 0; i < 12; ++i) t.floats()[i] = static_cast<float>(i);
    const Tensor a = from_dlpack(&t.managed);
    CHECK(a.strides() == Strides{1, 3});
    CHECK(a.to_vector<float>() == std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11});
    // Reversed: element 0 at byte_offset 20 (float 5), stride -1; the storage starts at the lowest element.
    Producer r({6}, dl(kDLFloat, 32), {-1});
    for (int i = 0; i < 6; ++i) r.floats()[i] = static_cast<float>(i);
    r.managed.dl_tensor.byte_offset = 20;
    const Tensor b = from_dlpack(&r.managed);
    CHECK(b.to_vector<float>() == std::vector<float>{5, 4, 3, 2, 1, 0});
    CHECK(b.data() == r.floats() + 5);
    CHECK(b.storage()->ptr == r.floats());
    CHECK(b.slice({{1, 3}}).to_vector<float>() == std::vector<float>{4, 3});
    // Exported again: data at element 0, byte_offset 0, the strides as they are.
    DLManagedTensor* back = b.to_dlpack();
    CHECK(back->dl_tensor.data == r.floats() + 5);
    CHECK(back->dl_tensor.strides[0] == -1);
    back->deleter(back);
    // Null strides: contiguous row-major; a rank-0 tensor.
    Producer c({2, 3}, dl(kDLInt, 64));
    CHECK(from_dlpack(&c.managed).strides() == Strides{3, 1});
    Producer s({}, dl(kDLFloat, 64));
    s.memory[0] = 0x4000000000000000ull;  // 2.0
    CHECK(from_dlpack(&s.managed).item<double>() == 2.0);
    // An empty tensor with a null pointer.
    Producer e({0, 5}, dl(kDLFloat, 32));
    e.managed.dl_tensor.data = nullptr;
    CHECK(from_dlpack(&e.managed).numel() == 0);
}

TEST_CASE("dlpack: what Loom cannot take is an Error naming from_dlpack, the dtype or device and the line") {
    const auto at_line = [](const std::string& msg, int line) {
        return msg.find(fmt::format("test_dlpack.cpp:{})", line)) != std::string::npos;
    };
    Producer lanes({8}, dl(kDLFloat, 32, 4));
    int line = __LINE__ + 1;
    std::string msg = loom_test::error_message([&] { (void)from_dlpack(&lanes.managed); });
    CHECK(msg.starts_with("from_dlpack(): DLPack dtype kDLFloat of 32 bits and 4 lanes"));
    CHECK(msg.find("one lane") != std::string::npos);
    CHECK(at_line(msg, line));
    CHECK(lanes.deleted == 0);

    Producer complex({8}, dl(kDLComplex, 64));
    CHECK(from_dlpack_error(complex).starts_with("from_dlpack(): DLPack dtype kDLComplex of 64 bits"));
    Producer wide_bool({8}, dl(dlpack::kBoolCode, 16));
    CHECK(from_dlpack_error(wide_bool).find("kDLBool of 16 bits") != std::string::npos);

    Producer opencl({8}, dl(kDLFloat, 32));
    opencl.managed.dl_tensor.device = {kDLOpenCL, 1};
    line = __LINE__ + 1;
    msg = loom_test::error_message([&] { (void)from_dlpack(&opencl.managed); });
    CHECK(msg.starts_with("from_dlpack(): DLPack device kDLOpenCL (id 1) is not supported"));
    CHECK(at_line(msg, line));
    Producer rocm({8}, dl(kDLFloat, 32));
    rocm.managed.dl_tensor.device = {kDLROCM, 0};
    CHECK(from_dlpack_error(rocm).find("kDLROCM") != std::string::npos);
    Producer negative_id({8}, dl(kDLFloat, 32));
    negative_id.managed.dl_tensor.device = {kDLCUDA, -1};
    CHECK(from_dlpack_error(negative_id).find("kDLCUDA device id -1") != std::string::npos);
    if (!cuda_available()) {  // a GPU tensor without a GPU: refused at the import, not at its first use
        Producer gpu_tensor({8}, dl(kDLFloat, 32));
        gpu_tensor.managed.dl_tensor.device = {kDLCUDA, 0};
        line = __LINE__ + 1;
        msg = loom_test::error_message([&] { (void)from_dlpack(&gpu_tensor.managed); });
        CHECK(msg.find("from_dlpack() of a kDLCUDA tensor") != std::string::npos);
        CHECK(at_line(msg, line));
        CHECK(gpu_tensor.deleted == 0);  // not taken: the caller still owns it
    }

    Producer odd_offset({8}, dl(kDLFloat, 32));
    odd_offset.managed.dl_tensor.byte_offset = 6;
    CHECK(from_dlpack_error(odd_offset).find("byte_offset 6 is not a multiple of the 4 bytes") !=
          std::string::npos);
    Producer misaligned({8}, dl(kDLFloat, 32));
    misaligned.managed.dl_tensor.data = reinterpret_cast<std::byte*>(misaligned.memory.data()) + 2;
    CHECK(from_dlpack_error(misaligned).find("is not aligned to the 4 bytes of a float32 element") !=
          std::string::npos);

    Producer huge_stride({3, 4}, dl(kDLFloat, 32), {INT64_MAX / 2, 1});
    CHECK(from_dlpack_error(huge_stride).find("beyond a 64-bit byte count") != std::string::npos);
    Producer negative_extent({-2}, dl(kDLFloat, 32));
    CHECK(from_dlpack_error(negative_extent).find("negative extent") != std::string::npos);
    Producer rank9({1, 1, 1, 1, 1, 1, 1, 1, 1}, dl(kDLFloat, 32));
    CHECK(from_dlpack_error(rank9).find("rank 9 is outside 0 to 8") != std::string::npos);
    Producer null_shape({2}, dl(kDLFloat, 32));
    null_shape.managed.dl_tensor.shape = nullptr;
    CHECK(from_dlpack_error(null_shape).find("a null shape for rank 1") != std::string::npos);
    Producer null_data({2}, dl(kDLFloat, 32));
    null_data.managed.dl_tensor.data = nullptr;
    CHECK(from_dlpack_error(null_data).find("a null data pointer") != std::string::npos);

    CHECK(loom_test::error_message([] {
              (void)from_dlpack(static_cast<DLManagedTensor*>(nullptr));
          }).starts_with("from_dlpack(): a null"));
    line = __LINE__ + 1;
    msg = loom_test::error_message([] { (void)Tensor().to_dlpack(); });
    CHECK(msg.starts_with("to_dlpack(): an undefined Tensor"));
    CHECK(at_line(msg, line));
}

TEST_CASE("dlpack: DLPack 1.0's versioned tensors both ways, and a major version Loom does not take") {
    Producer p({2, 3}, dl(kDLFloat, 32));
    for (int i = 0; i < 6; ++i) p.floats()[i] = static_cast<float>(i) + 0.5f;
    struct Versioned {
        dlpack::ManagedTensorVersioned managed{};
        int deleted = 0;
    } v;
    v.managed.version = {1, 2};
    v.managed.flags = dlpack::kFlagReadOnly;
    v.managed.dl_tensor = p.managed.dl_tensor;
    v.managed.manager_ctx = &v;
    v.managed.deleter = [](dlpack::ManagedTensorVersioned* self) {
        ++static_cast<Versioned*>(self->manager_ctx)->deleted;
    };
    {
        const Tensor t = from_dlpack(&v.managed);
        CHECK(t.data() == p.memory.data());
        CHECK(t.to_vector<float>() == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f});
        CHECK(v.deleted == 0);
    }
    CHECK(v.deleted == 1);

    v.managed.version = {2, 0};
    const int line = __LINE__ + 1;
    const std::string msg = loom_test::error_message([&] { (void)from_dlpack(&v.managed); });
    CHECK_MESSAGE(msg.find("from_dlpack(): DLPack version 2.0 is not supported") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(fmt::format("test_dlpack.cpp:{}", line)) != std::string::npos, msg);
    CHECK(v.deleted == 1);  // refused: still the caller's
    CHECK(loom_test::error_message([] {
              (void)from_dlpack(static_cast<dlpack::ManagedTensorVersioned*>(nullptr));
          }).find("a null DLManagedTensorVersioned") != std::string::npos);

    const Tensor source =
        Tensor(Array(arange(0, 12, 1, float32, Device::cpu())).reshape({3, 4})).slice({{1, 3}});
    dlpack::ManagedTensorVersioned* out = to_dlpack_versioned(source);
    CHECK(out->version.major == 1);
    CHECK(out->version.minor == 0);
    CHECK(out->flags == 0);
    CHECK(out->dl_tensor.data == source.data());
    CHECK(out->dl_tensor.strides[0] == source.strides()[0]);
    CHECK(out->dl_tensor.strides[1] == source.strides()[1]);
    const Tensor back = from_dlpack(out);  // Loom takes its own export: same memory, the deleter frees it
    CHECK(back.data() == source.data());
    CHECK(back.to_vector<float>() == source.to_vector<float>());
    CHECK(loom_test::error_message([] {
              (void)to_dlpack_versioned(Tensor());
          }).find("to_dlpack_versioned()") != std::string::npos);
}
