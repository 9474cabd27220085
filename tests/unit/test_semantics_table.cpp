// docs/semantics.md's type promotion table agrees with loom::promote for every pair of dtypes.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/ir/dtype.hpp"

namespace {

std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string cell;
    std::getline(ss, cell, '|');  // text before the first '|'
    while (std::getline(ss, cell, '|')) {
        const auto b = cell.find_first_not_of(" `");
        const auto e = cell.find_last_not_of(" `");
        out.push_back(b == std::string::npos ? std::string() : cell.substr(b, e - b + 1));
    }
    if (!out.empty() && out.back().empty()) out.pop_back();
    return out;
}

}  // namespace

TEST_CASE("the promotion table of docs/semantics.md is promote()") {
    std::ifstream f(std::string(LOOM_SOURCE_DIR) + "/docs/semantics.md");
    REQUIRE(f.good());
    std::string line;
    bool in_table = false;
    std::vector<std::string> header;
    int rows = 0;
    while (std::getline(f, line)) {
        if (line.find("<!-- promotion-table:begin -->") != std::string::npos) {
            in_table = true;
            continue;
        }
        if (line.find("<!-- promotion-table:end -->") != std::string::npos) break;
        if (!in_table || line.empty() || line[0] != '|') continue;
        auto c = cells(line);
        if (header.empty()) {
            header = c;
            continue;
        }
        if (c.size() > 1 && c[1].find("---") != std::string::npos) continue;
        REQUIRE(c.size() == header.size());
        const loom::DType a = loom::kAllDTypes[rows];
        CHECK(c[0] == loom::name(a));
        for (int k = 0; k < loom::kNumDTypes; ++k) {
            const loom::DType b = loom::kAllDTypes[k];
            CHECK(header[static_cast<std::size_t>(k + 1)] == loom::name(b));
            CHECK_MESSAGE(c[static_cast<std::size_t>(k + 1)] == loom::name(loom::promote(a, b)),
                          loom::name(a) << " with " << loom::name(b));
        }
        ++rows;
    }
    CHECK(rows == loom::kNumDTypes);
}

TEST_CASE("promote is symmetric and weak scalars keep the array's dtype") {
    for (auto a : loom::kAllDTypes)
        for (auto b : loom::kAllDTypes) CHECK(loom::promote(a, b) == loom::promote(b, a));
    CHECK(loom::promote_weak(loom::float16, loom::ScalarKind::Float) == loom::float16);
    CHECK(loom::promote_weak(loom::int8, loom::ScalarKind::Float) == loom::float32);
    CHECK(loom::promote_weak(loom::int8, loom::ScalarKind::Int) == loom::int8);
    CHECK(loom::promote_weak(loom::bool_, loom::ScalarKind::Int) == loom::int32);
    CHECK(loom::promote_weak(loom::bool_, loom::ScalarKind::Bool) == loom::bool_);
}
