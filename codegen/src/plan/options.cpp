// The options value: its hash and text, the per-thread scopes, and the defaults from the environment.
#include "loom/codegen/options.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "loom/ir/env.hpp"
#include "loom/ir/hash.hpp"

namespace loom {

namespace {

thread_local const Options* t_scope = nullptr;

/// "64x64" or "128x128x32" into `hint`; false (hint untouched) for anything else.
bool parse_tile(const char* text, TileHint& hint) {
    int v[3] = {0, 0, 0};
    int k = 0;
    const char* p = text;
    for (;;) {
        char* end = nullptr;
        const long x = std::strtol(p, &end, 10);
        if (end == p || x <= 0 || x > (1 << 20) || k == 3) return false;
        v[k++] = static_cast<int>(x);
        if (*end == '\0') break;
        if (*end != 'x') return false;
        p = end + 1;
    }
    if (k < 2) return false;
    hint = TileHint{v[0], v[1], v[2]};
    return true;
}

std::string_view capture_name(CapturePolicy c) {
    switch (c) {
        case CapturePolicy::Never:
            return "never";
        case CapturePolicy::Auto:
            return "auto";
    }
    return "?";
}

}  // namespace

const char* product_path_name(ProductPath p) {
    switch (p) {
        case ProductPath::Auto:
            return "auto";
        case ProductPath::CudaCores:
            return "cuda_cores";
        case ProductPath::TensorCores:
            return "tensor_cores";
        case ProductPath::MmaSync:
            return "mma_sync";
    }
    return "?";
}

const char* product_precision_name(ProductPrecision p) {
    switch (p) {
        case ProductPrecision::Float32:
            return "float32";
        case ProductPrecision::TF32:
            return "tf32";
        case ProductPrecision::TF32x3:
            return "3xtf32";
    }
    return "?";
}

const char* stencil_reuse_name(StencilReuse r) {
    switch (r) {
        case StencilReuse::Auto:
            return "auto";
        case StencilReuse::L1:
            return "l1";
        case StencilReuse::SharedHalo:
            return "shared_halo";
    }
    return "?";
}

std::uint64_t Options::hash() const {
    Hasher h;
    h.add(std::string_view("loom.options.v1"));
    h.add(fast_math);
    h.add(line_info);
    h.add(fusion);
    h.add(static_cast<std::uint64_t>(capture));
    h.add(static_cast<std::uint64_t>(tile.rows));
    h.add(static_cast<std::uint64_t>(tile.cols));
    h.add(static_cast<std::uint64_t>(tile.depth));
    h.add(static_cast<std::uint64_t>(product_path));
    h.add(static_cast<std::uint64_t>(stencil_reuse));
    h.add(static_cast<std::uint64_t>(product_precision));
    h.add(attention_rewrite);
    return h.digest();
}

std::string Options::to_string() const {
    return fmt::format(
        "fast_math={} line_info={} fusion={} capture={} tile={} product_path={} product_precision={} "
        "stencil_reuse={} attention_rewrite={}",
        fast_math ? "on" : "off", line_info ? "on" : "off", fusion ? "on" : "off", capture_name(capture),
        tile.empty() ? std::string("auto") : fmt::format("{}x{}x{}", tile.rows, tile.cols, tile.depth),
        product_path_name(product_path), product_precision_name(product_precision),
        stencil_reuse_name(stencil_reuse), attention_rewrite ? "on" : "off");
}

Options environment_options() {
    Options o;
    o.fast_math = env_switch("LOOM_FAST_MATH", false);
    o.line_info = env_switch("LOOM_LINEINFO", false);
    o.fusion = env_switch("LOOM_FUSION", true);
    o.attention_rewrite = env_switch("LOOM_ATTENTION_REWRITE", false);
    if (const char* t = std::getenv("LOOM_CAPTURE"); t && *t) {
        const std::string_view v(t);
        if (v == "never" || v == "off" || v == "0")
            o.capture = CapturePolicy::Never;
        else if (v != "auto")
            std::fprintf(stderr, "loom warning: LOOM_CAPTURE=%s is not auto or never; auto\n", t);
    }
    if (const char* t = std::getenv("LOOM_TILE"); t && *t) {
        if (!parse_tile(t, o.tile))
            std::fprintf(stderr,
                         "loom warning: LOOM_TILE=%s is not ROWSxCOLS or ROWSxCOLSxDEPTH (positive numbers); "
                         "no tile hint\n",
                         t);
    }
    if (const char* t = std::getenv("LOOM_PRODUCT_PATH"); t && *t) {
        const std::string_view v(t);
        if (v == "auto")
            o.product_path = ProductPath::Auto;
        else if (v == "cuda_cores")
            o.product_path = ProductPath::CudaCores;
        else if (v == "tensor_cores")
            o.product_path = ProductPath::TensorCores;
        else if (v == "mma_sync")
            o.product_path = ProductPath::MmaSync;
        else
            std::fprintf(stderr,
                         "loom warning: LOOM_PRODUCT_PATH=%s is not auto, cuda_cores, tensor_cores or "
                         "mma_sync; auto\n",
                         t);
    }
    if (const char* t = std::getenv("LOOM_PRODUCT_PRECISION"); t && *t) {
        const std::string_view v(t);
        if (v == "float32")
            o.product_precision = ProductPrecision::Float32;
        else if (v == "tf32")
            o.product_precision = ProductPrecision::TF32;
        else if (v == "3xtf32")
            o.product_precision = ProductPrecision::TF32x3;
        else
            std::fprintf(stderr,
                         "loom warning: LOOM_PRODUCT_PRECISION=%s is not float32, tf32 or 3xtf32; float32\n",
                         t);
    }
    if (const char* t = std::getenv("LOOM_STENCIL_REUSE"); t && *t) {
        const std::string_view v(t);
        if (v == "auto")
            o.stencil_reuse = StencilReuse::Auto;
        else if (v == "l1")
            o.stencil_reuse = StencilReuse::L1;
        else if (v == "shared_halo")
            o.stencil_reuse = StencilReuse::SharedHalo;
        else
            std::fprintf(stderr, "loom warning: LOOM_STENCIL_REUSE=%s is not auto, l1 or shared_halo; auto\n",
                         t);
    }
    return o;
}

const Options& current_options() {
    static const Options defaults = environment_options();
    return t_scope ? *t_scope : defaults;
}

OptionsScope::OptionsScope(const Options& options) : previous_(t_scope), options_(options) {
    t_scope = &options_;
}

OptionsScope::~OptionsScope() {
    t_scope = previous_;
}

}  // namespace loom
