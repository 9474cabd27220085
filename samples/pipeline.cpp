// pipeline: a stream of batches through a fused kernel, with the host-device copies overlapped with the
// kernels on two streams (double buffering), against the same work done serially on one stream.
//
// The data: N batches (default 16) of M float32 values (default 16M, 64 MiB) in pinned host memory; each
// batch goes host -> device, through y = gelu(x * 1.5 + 0.25) * x (one kernel, a traced function), and
// device -> host into pinned memory. Pipelined:
//
//   copy stream:     H2D 0 | H2D 1 | H2D 2 | ...              (batch i+1 into the other input buffer)
//   compute stream:        | K 0, D2H 0 | K 1, D2H 1 | ...    (kernel and copy back of batch i)
//
// Events order the two streams: the kernel on batch i waits for its upload (h2d_done), and the upload of
// batch i+1 into an input buffer waits for the kernel that read that buffer two batches earlier
// (kernel_done), so no buffer is overwritten before its kernel finished. The copy back runs on the compute
// stream after the kernel, so the one output buffer is reused in stream order. Serial: the same copies and
// kernels one after the other on one stream. Prints both times, the speed-up and how much of the possible
// overlap was achieved, and checks three batches against the CPU reference. Without a GPU it says so,
// compiles the kernel with NVRTC, checks a small batch on the CPU reference and exits 0.
#include <loom/loom.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace loom;

namespace {

Array step_of(const Array& x) { return gelu(x * 1.5 + 0.25) * x; }

// Batch `i` of a [batches, m] host tensor, as a [m] tensor sharing its (pinned) memory.
Tensor batch(const Tensor& all, std::int64_t i) {
    const std::int64_t m = all.shape()[1];
    return all.as_strided({m}, {1}, i * m);
}

struct Phases {
    double h2d = 0, kernels = 0, d2h = 0;
};

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t batches = argc > 1 ? std::atoll(argv[1]) : 16;
    const std::int64_t m = argc > 2 ? std::atoll(argv[2]) : std::int64_t{16} << 20;
    if (batches < 2 || m < 1) {
        std::fprintf(stderr, "usage: pipeline [batches >= 2] [floats per batch >= 1]\n");
        return 2;
    }
    auto step = loom::function("pipeline_step", [](Array x) { return step_of(x); });

    if (!cuda_available()) {
        Tensor x = random_normal({4096}, float32, next_seed(), Device::cpu());
        const Tensor y = step(x);  // the CPU reference runs the traced function on host tensors
        const auto check = testing::check_against_reference({step_of(x).node()}, {y});
        const CompileReport rep = compile({step_of(x)}, "pipeline_step");
        std::printf("no CUDA GPU was found: this sample overlaps host-device copies with kernels and needs one.\n"
                    "The step kernel was generated and compiled with NVRTC for %s (%s); one batch of %d values on the "
                    "CPU reference: %s\n",
                    rep.arch.c_str(), rep.disk_hits > 0 ? "from the disk kernel cache" : "compiled now", 4096,
                    check.ok ? "PASS" : check.message.c_str());
        return 0;
    }

    const double batch_mib = static_cast<double>(m) * 4 / (1 << 20);
    std::printf("pipeline: %lld batches of %lld float32 values (%.1f MiB each, %.2f GiB in and out) in pinned host "
                "memory\n",
                static_cast<long long>(batches), static_cast<long long>(m), batch_mib,
                batch_mib * static_cast<double>(batches) / 1024);
    Tensor host_in = pinned_empty({batches, m}, float32);
    Tensor host_out = pinned_empty({batches, m}, float32);
    {
        const Tensor r = random_normal({batches, m}, float32, next_seed(), Device::cuda());  // cuRAND, then down
        copy_async(host_in, r);
        synchronize();
    }
    Tensor din[2] = {Tensor::empty({m}, float32, Device::cuda()), Tensor::empty({m}, float32, Device::cuda())};
    Tensor dout = Tensor::empty({m}, float32, Device::cuda());
    step(din[0], dout);  // trace, plan, compile (or load from the disk cache) once
    synchronize();       // the buffers are ready before other streams touch them

    Stream copy, compute;
    Event h2d_done[2] = {Event(false), Event(false)}, kernel_done[2] = {Event(false), Event(false)};

    // Serial: upload, kernel, download, batch after batch on one stream; events between the phases.
    auto serial = [&](Phases& ph) {
        std::vector<Event> ev;
        for (std::int64_t i = 0; i < 3 * batches + 1; ++i) ev.emplace_back();
        StreamGuard on(compute);
        ev[0].record();
        for (std::int64_t i = 0; i < batches; ++i) {
            copy_async(din[0], batch(host_in, i));
            ev[static_cast<std::size_t>(3 * i + 1)].record();
            step(din[0], dout);
            ev[static_cast<std::size_t>(3 * i + 2)].record();
            copy_async(batch(host_out, i), dout);
            ev[static_cast<std::size_t>(3 * i + 3)].record();
        }
        ev.back().synchronize();
        ph = {};
        for (std::size_t i = 0; i + 1 < ev.size(); i += 3) {
            ph.h2d += Event::elapsed_ms(ev[i], ev[i + 1]);
            ph.kernels += Event::elapsed_ms(ev[i + 1], ev[i + 2]);
            ph.d2h += Event::elapsed_ms(ev[i + 2], ev[i + 3]);
        }
        return Event::elapsed_ms(ev.front(), ev.back());
    };

    // Pipelined: uploads on the copy stream, kernels and downloads on the compute stream, double-buffered.
    auto pipelined = [&] {
        Event start, stop;
        StreamGuard on(compute);  // step() launches on the current stream
        start.record(compute);
        start.wait(copy);
        copy_async(din[0], batch(host_in, 0), copy);
        h2d_done[0].record(copy);
        for (std::int64_t i = 0; i < batches; ++i) {
            const int b = static_cast<int>(i % 2), nb = 1 - b;
            if (i + 1 < batches) {
                if (i >= 1) kernel_done[nb].wait(copy);  // kernel i-1 has read din[nb]
                copy_async(din[nb], batch(host_in, i + 1), copy);
                h2d_done[nb].record(copy);
            }
            h2d_done[b].wait(compute);  // batch i is in din[b]
            step(din[b], dout);
            kernel_done[b].record(compute);
            copy_async(batch(host_out, i), dout, compute);  // after the kernel; before the next one writes dout
        }
        stop.record(compute);  // the copy stream's last upload is ordered before the last kernel
        stop.synchronize();
        return Event::elapsed_ms(start, stop);
    };

    // Best of two runs of each (the first also warms the copy engines).
    Phases ph, again;
    float t_serial = serial(ph);
    if (const float t = serial(again); t < t_serial) {
        t_serial = t;
        ph = again;
    }
    std::memset(host_out.data(), 0xff, host_out.nbytes());  // NaNs: a batch not written fails the check
    float t_pipe = pipelined();
    t_pipe = std::min(t_pipe, pipelined());

    // With two streams the best possible time is the longer stream's work: uploads on one, kernels and
    // downloads on the other.
    const double ideal = std::max(ph.h2d, ph.kernels + ph.d2h);
    const double possible = std::max(static_cast<double>(t_serial) - ideal, 1e-9);
    const double gained = static_cast<double>(t_serial) - static_cast<double>(t_pipe);
    std::printf("serial (one stream):      %8.2f ms  (host-to-device %.2f ms, kernels %.2f ms, device-to-host %.2f ms)\n",
                t_serial, ph.h2d, ph.kernels, ph.d2h);
    std::printf("pipelined (two streams):  %8.2f ms  (bound by the longer stream: %.2f ms)\n", t_pipe, ideal);
    std::printf("copies overlapped with kernels: %.2fx faster than serial; %.0f%% of the achievable overlap, "
                "%.0f%% of the host-to-device copy time hidden\n",
                static_cast<double>(t_serial) / static_cast<double>(t_pipe),
                100.0 * std::clamp(gained / possible, 0.0, 1.0), 100.0 * std::clamp(gained / ph.h2d, 0.0, 1.0));

    bool ok = true;
    std::string checked;
    for (const std::int64_t i : {std::int64_t{0}, batches / 2, batches - 1}) {
        const auto c = testing::check_against_reference({step_of(batch(host_in, i)).node()}, {batch(host_out, i)});
        if (!c.ok) std::printf("batch %lld: %s\n", static_cast<long long>(i), c.message.c_str());
        ok = ok && c.ok;
        checked += (checked.empty() ? "" : ", ") + std::to_string(i);
    }
    std::printf("check of batches %s against the CPU reference: %s\n", checked.c_str(), ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
