// libloom_llvm.so: Loom's host back end module. It takes the LLVM IR text that Loom's emitters write
// (codegen/src/llvm), parses, verifies, optimizes and compiles it to an object file for the host CPU, and
// links objects into an ORC JIT (LLJIT) whose symbols include the runtime's scalar library. The runtime loads
// this module with dlopen (runtime/src/host_backend.cpp) through the C table of
// loom/runtime/host_backend_abi.h; nothing of LLVM is visible outside it.
//
// The numeric contract (docs/semantics.md) is kept here by what is left off: no fast-math flag is ever set
// (no contraction: FPOpFusion::Strict; no reassociation, no approximate functions, IEEE denormals), the
// bfloat16 conversion features are removed from the target (LLVM lowers fptrunc to bfloat with
// vcvtneps2bf16, which flushes subnormals), and no vectorizer runs: the emitters vectorize explicitly, and
// reductions spell their lane order out, so nothing depends on what a vectorizer would do.
#include <llvm/AsmParser/Parser.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/runtime/host_backend_abi.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void put(loom_hb_buffer* b, const std::string& s) {
    if (!b) return;
    b->data = static_cast<char*>(std::malloc(s.size() + 1));
    if (!b->data) {
        b->size = 0;
        return;
    }
    std::memcpy(b->data, s.data(), s.size());
    b->data[s.size()] = '\0';
    b->size = s.size();
}

std::string to_string(llvm::Error e) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << e;
    return os.str();
}

// Features the JIT never uses: the bfloat16 conversions (they flush subnormals; the emitters round bfloat16
// on the bits instead).
bool excluded(llvm::StringRef feature) {
    return feature == "avx512bf16" || feature == "avxneconvert";
}

struct State {
    std::string triple, cpu, features, version;
    int vector_bits = 128;
    bool f16c = false;
    const llvm::Target* target = nullptr;
    std::unique_ptr<llvm::orc::LLJIT> jit;
    llvm::orc::JITDylib* library = nullptr;  // the runtime's scalar library and the process's C library
    std::atomic<std::uint64_t> next{0};
    std::mutex mu;  // JITDylib creation and removal
    // Target machines not in use. Making one (and the subtarget it makes for the first function it compiles)
    // is about a fifth of compiling a one-op kernel, so compile() takes one from here and gives it back; a
    // target machine compiles one module at a time, so concurrent compilations each have their own.
    std::mutex machines_mu;
    std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
};

State* g_state = nullptr;

// The optimization pipeline of every kernel (it enters the disk cache key through pipeline()).
constexpr const char* kPipeline =
    "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),"
    "instcombine<no-verify-fixpoint>,simplifycfg)";

std::unique_ptr<llvm::TargetMachine> make_target_machine(const State& s) {
    llvm::TargetOptions to;
    to.AllowFPOpFusion = llvm::FPOpFusion::Strict;  // a * b + c rounds twice (docs/semantics.md section 1)
    to.UnsafeFPMath = false;
    to.NoInfsFPMath = false;
    to.NoNaNsFPMath = false;
    to.NoSignedZerosFPMath = false;
    to.ApproxFuncFPMath = false;
    return std::unique_ptr<llvm::TargetMachine>(s.target->createTargetMachine(
        s.triple, s.cpu, s.features, to, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Default));
}

// A target machine of the pool for the duration of one compilation (null when LLVM cannot make one).
class PooledMachine {
  public:
    explicit PooledMachine(State& s) : s_(s) {
        {
            std::lock_guard lock(s_.machines_mu);
            if (!s_.machines.empty()) {
                tm_ = std::move(s_.machines.back());
                s_.machines.pop_back();
            }
        }
        if (!tm_) tm_ = make_target_machine(s_);
    }
    PooledMachine(const PooledMachine&) = delete;
    PooledMachine& operator=(const PooledMachine&) = delete;
    ~PooledMachine() {
        if (!tm_) return;
        std::lock_guard lock(s_.machines_mu);
        s_.machines.push_back(std::move(tm_));
    }
    llvm::TargetMachine* get() const { return tm_.get(); }

  private:
    State& s_;
    std::unique_ptr<llvm::TargetMachine> tm_;
};

int init(const loom_hb_symbol* symbols, size_t count, loom_hb_buffer* error) {
    if (g_state) return 0;
    auto s = std::make_unique<State>();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    s->triple = llvm::sys::getProcessTriple();
    s->cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures features;
    const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    bool avx512 = false, avx2 = false;
    for (const auto& kv : host) {
        const bool on = kv.getValue() && !excluded(kv.getKey());
        features.AddFeature(kv.getKey(), on);
        if (on && kv.getKey() == "avx512f") avx512 = true;
        if (on && kv.getKey() == "avx2") avx2 = true;
        if (on && kv.getKey() == "f16c") s->f16c = true;
    }
    s->features = features.getString();
    s->vector_bits = avx512 ? 512 : avx2 ? 256 : 128;
    s->version = LLVM_VERSION_STRING;
    std::string err;
    s->target = llvm::TargetRegistry::lookupTarget(s->triple, err);
    if (!s->target) {
        put(error, "no LLVM target for " + s->triple + ": " + err);
        return 1;
    }
    auto jtmb = llvm::orc::JITTargetMachineBuilder(llvm::Triple(s->triple));
    jtmb.setCPU(s->cpu);
    jtmb.addFeatures(std::vector<std::string>{s->features});
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
    if (!jit) {
        put(error, "cannot create the ORC JIT: " + to_string(jit.takeError()));
        return 1;
    }
    s->jit = std::move(*jit);
    auto lib = s->jit->getExecutionSession().createJITDylib("loom_host_library");
    if (!lib) {
        put(error, "cannot create the JIT's library: " + to_string(lib.takeError()));
        return 1;
    }
    s->library = &*lib;
    llvm::orc::SymbolMap map;
    auto& es = s->jit->getExecutionSession();
    for (size_t k = 0; k < count; ++k)
        map[es.intern(symbols[k].name)] = {llvm::orc::ExecutorAddr::fromPtr(symbols[k].address),
                                           llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
    if (auto e = s->library->define(llvm::orc::absoluteSymbols(std::move(map)))) {
        put(error, "cannot define the scalar library's symbols: " + to_string(std::move(e)));
        return 1;
    }
    // fmod, fmodf, memcpy and memset, which LLVM may call for frem and wide copies: the process's own.
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        s->jit->getDataLayout().getGlobalPrefix());
    if (!gen) {
        put(error, "cannot search the process's symbols: " + to_string(gen.takeError()));
        return 1;
    }
    s->library->addGenerator(std::move(*gen));
    g_state = s.release();
    return 0;
}

const char* pipeline() {
    return kPipeline;
}

const char* llvm_version() {
    return g_state ? g_state->version.c_str() : LLVM_VERSION_STRING;
}
const char* triple() {
    return g_state ? g_state->triple.c_str() : "";
}
const char* cpu() {
    return g_state ? g_state->cpu.c_str() : "";
}
const char* features() {
    return g_state ? g_state->features.c_str() : "";
}
int vector_bits() {
    return g_state ? g_state->vector_bits : 0;
}
int has_f16c() {
    return g_state && g_state->f16c ? 1 : 0;
}

int compile(const char* ir, size_t size, const char* name, loom_hb_buffer* object, loom_hb_buffer* error,
            double* ms) {
    if (!g_state) {
        put(error, "the LLVM back end is not initialized");
        return 1;
    }
    const auto t0 = Clock::now();
    llvm::LLVMContext ctx;
    llvm::SMDiagnostic diag;
    auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(ir, size), name, false);
    std::unique_ptr<llvm::Module> mod = llvm::parseAssembly(buffer->getMemBufferRef(), diag, ctx);
    if (!mod) {
        std::string s;
        llvm::raw_string_ostream os(s);
        diag.print(name, os);
        put(error, os.str());
        return 1;
    }
    const PooledMachine pooled(*g_state);
    llvm::TargetMachine* tm = pooled.get();
    if (!tm) {
        put(error, "cannot create a target machine for " + g_state->cpu);
        return 1;
    }
    mod->setTargetTriple(g_state->triple);
    mod->setDataLayout(tm->createDataLayout());
    {
        std::string s;
        llvm::raw_string_ostream os(s);
        if (llvm::verifyModule(*mod, &os)) {
            put(error, "the generated IR does not verify: " + os.str());
            return 1;
        }
    }
    {
        // A short function pipeline: the emitters' stack slots to registers (SROA), common subexpressions,
        // instruction combining, control-flow cleanup and loop-invariant code motion. The code is vector code
        // already and every loop is written as it should run, so the O2 pipeline's loop transformations and
        // vectorizers would add compile time (about three times as much, measured on the reduction kernels)
        // for nothing; tests/golden keeps the kernels' text stable, bench/loom_host_bench.cpp their speed.
        llvm::LoopAnalysisManager lam;
        llvm::FunctionAnalysisManager fam;
        llvm::CGSCCAnalysisManager cgam;
        llvm::ModuleAnalysisManager mam;
        llvm::PassBuilder pb(tm);
        pb.registerModuleAnalyses(mam);
        pb.registerCGSCCAnalyses(cgam);
        pb.registerFunctionAnalyses(fam);
        pb.registerLoopAnalyses(lam);
        pb.crossRegisterProxies(lam, fam, cgam, mam);
        llvm::ModulePassManager mpm;
        if (auto e = pb.parsePassPipeline(mpm, kPipeline)) {
            put(error, "the pass pipeline does not parse: " + to_string(std::move(e)));
            return 1;
        }
        mpm.run(*mod, mam);
    }
    const double t_opt = ms_since(t0);
    llvm::SmallVector<char, 0> obj;
    {
        llvm::raw_svector_ostream os(obj);
        llvm::legacy::PassManager pm;
        if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
            put(error, "the target cannot emit object files");
            return 1;
        }
        pm.run(*mod);
    }
    if (ms) {
        ms[0] = t_opt;
        ms[1] = ms_since(t0) - t_opt;
    }
    object->data = static_cast<char*>(std::malloc(obj.size() ? obj.size() : 1));
    if (!object->data) {
        put(error, "out of memory for the object file");
        return 1;
    }
    std::memcpy(object->data, obj.data(), obj.size());
    object->size = obj.size();
    return 0;
}

struct Loaded {
    llvm::orc::JITDylib* dylib = nullptr;
};

void* load(const char* object, size_t size, const char* name, loom_hb_buffer* error) {
    if (!g_state) {
        put(error, "the LLVM back end is not initialized");
        return nullptr;
    }
    State& s = *g_state;
    llvm::orc::JITDylib* jd = nullptr;
    {
        std::lock_guard lock(s.mu);
        const std::string dn = std::string(name) + "." + std::to_string(s.next++);
        auto created = s.jit->getExecutionSession().createJITDylib(dn);
        if (!created) {
            put(error, "cannot create a JIT library: " + to_string(created.takeError()));
            return nullptr;
        }
        jd = &*created;
        jd->addToLinkOrder(*s.library);
    }
    auto mb = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object, size), name);
    if (auto e = s.jit->addObjectFile(*jd, std::move(mb))) {
        put(error, "cannot link the object file: " + to_string(std::move(e)));
        std::lock_guard lock(s.mu);
        llvm::consumeError(s.jit->getExecutionSession().removeJITDylib(*jd));
        return nullptr;
    }
    return new Loaded{jd};
}

void* symbol(void* handle, const char* sym, loom_hb_buffer* error) {
    if (!g_state || !handle) {
        put(error, "no loaded object");
        return nullptr;
    }
    auto addr = g_state->jit->lookup(*static_cast<Loaded*>(handle)->dylib, sym);
    if (!addr) {
        put(error, std::string("cannot find ") + sym + ": " + to_string(addr.takeError()));
        return nullptr;
    }
    return addr->toPtr<void*>();
}

void unload(void* handle) {
    if (!g_state || !handle) return;
    auto* l = static_cast<Loaded*>(handle);
    {
        std::lock_guard lock(g_state->mu);
        llvm::consumeError(g_state->jit->getExecutionSession().removeJITDylib(*l->dylib));
    }
    delete l;
}

void free_buffer(loom_hb_buffer* b) {
    if (!b) return;
    std::free(b->data);
    b->data = nullptr;
    b->size = 0;
}

const loom_host_backend_v1 kTable = {
    LOOM_HOST_BACKEND_ABI, init,     llvm_version, pipeline, triple, cpu,    features,
    vector_bits,           has_f16c, compile,      load,     symbol, unload, free_buffer,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const loom_host_backend_v1* loom_llvm_backend_v1() {
    return &kTable;
}
