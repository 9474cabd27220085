// The README's C++ examples compile in CI: every ```cpp block of README.md is quoted verbatim from a region
// of a sample (samples/*.cpp, built by samples/CMakeLists.txt), named on the line before the block as
// `<!-- quoted from samples/<file>.cpp, region <name> -->`. A region lies between `// [readme <name>]` and
// `// [/readme <name>]`; its text is compared without marker lines and without the indentation its lines
// share.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot read " << path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The lines of region `name` of `file`, marker lines dropped, common indentation removed.
std::string region(const std::string& file, const std::string& name) {
    const std::vector<std::string> lines = lines_of(std::string(LOOM_SOURCE_DIR) + "/" + file);
    const std::string open = "// [readme " + name + "]", close = "// [/readme " + name + "]";
    std::vector<std::string> body;
    bool inside = false, found = false;
    for (const std::string& l : lines) {
        const std::string trimmed = l.substr(std::min(l.find_first_not_of(' '), l.size()));
        if (trimmed == open) {
            inside = found = true;
            continue;
        }
        if (trimmed == close) inside = false;
        if (inside && !trimmed.starts_with("// [readme ") && !trimmed.starts_with("// [/readme "))
            body.push_back(l);
    }
    REQUIRE_MESSAGE(found, file << " has no region " << name);
    std::size_t indent = std::string::npos;
    for (const std::string& l : body)
        if (!l.empty()) indent = std::min(indent, l.find_first_not_of(' '));
    std::string text;
    for (const std::string& l : body) text += (l.size() >= indent ? l.substr(indent) : std::string()) + "\n";
    return text;
}

}  // namespace

TEST_CASE("every C++ block of README.md is a sample's region, verbatim") {
    const std::vector<std::string> readme = lines_of(std::string(LOOM_SOURCE_DIR) + "/README.md");
    const std::regex source(R"(<!-- quoted from (samples/[a-z_0-9]+\.cpp), region ([a-z_0-9]+) -->)");
    int blocks = 0;
    for (std::size_t i = 0; i < readme.size(); ++i) {
        if (readme[i] != "```cpp") continue;
        ++blocks;
        CAPTURE(i + 1);
        std::smatch m;
        REQUIRE_MESSAGE((i > 0 && std::regex_match(readme[i - 1], m, source)),
                        "README.md line " << i + 1 << ": a ```cpp block without a sample it is quoted from");
        std::string text;
        std::size_t j = i + 1;
        for (; j < readme.size() && readme[j] != "```"; ++j) text += readme[j] + "\n";
        CHECK_MESSAGE(text == region(m[1], m[2]),
                      "README.md line " << i + 1 << " differs from " << m[1] << ", region " << m[2]);
        i = j;
    }
    CHECK(blocks >= 3);
}
