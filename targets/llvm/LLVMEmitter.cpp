//===- LLVMEmitter.cpp - Kernel IR to LLVM IR: the module -----------------===//
//
// emitModule, the entry point, in the order the module is built: the
// constants as internal globals, one function per kernel (KernelEmitter:
// Statements.cpp, Expressions.cpp, StridedAccess.cpp, DotProducts.cpp,
// IntegerForms.cpp), the library's entry points (RunFunctions.cpp) and its
// model info (ModelInfo.cpp); then the module is verified. Also the
// module-wide types and libm declarations of ModuleEmitter (EmitterState.h).
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/LLVMEmitter.h"

#include "compiler/support/Error.h"
#include "targets/llvm/EmitterState.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::IRBuilder;
using llvm::Value;

/// Type of a value of `t` in registers.
llvm::Type *ModuleEmitter::valueType(DType t) {
  switch (t) {
  case DType::F32: return llvm::Type::getFloatTy(Ctx);
  case DType::F64: return llvm::Type::getDoubleTy(Ctx);
  case DType::F16:
  case DType::BF16: return llvm::Type::getInt16Ty(Ctx);
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0: return llvm::Type::getInt8Ty(Ctx);
  case DType::Bool: return llvm::Type::getInt1Ty(Ctx);
  case DType::I8:
  case DType::U8: return llvm::Type::getInt8Ty(Ctx);
  case DType::I16:
  case DType::U16: return llvm::Type::getInt16Ty(Ctx);
  case DType::I32:
  case DType::U32: return llvm::Type::getInt32Ty(Ctx);
  case DType::I64:
  case DType::U64: return llvm::Type::getInt64Ty(Ctx);
  case DType::Index: return IndexTy;
  default:
    MLCC_CHECK(false, "no LLVM type for " << dtypeName(t));
  }
  return nullptr;
}

/// Type of an element of `t` in memory (Bool is a byte).
llvm::Type *ModuleEmitter::memoryType(DType t) {
  return t == DType::Bool ? llvm::Type::getInt8Ty(Ctx) : valueType(t);
}

/// A libm function `name` of signature T(T[, T]).
llvm::FunctionCallee ModuleEmitter::libm(const std::string &name, llvm::Type *t, int args) {
  std::vector<llvm::Type *> params((size_t)args, t);
  auto *fty = llvm::FunctionType::get(t, params, false);
  llvm::FunctionCallee f = M.getOrInsertFunction(name, fty);
  if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotThrow();
    fn->setOnlyAccessesInaccessibleMemory(); // errno at most
  }
  return f;
}

namespace {

/// The program's constant data as internal globals, one per constant; with
/// `symbols`, declarations of hidden globals of those names (defined in
/// another object: constantsObject).
std::vector<llvm::GlobalVariable *> emitConstants(ModuleEmitter &me, const Program &p,
                                                  const std::vector<std::string> *symbols) {
  std::vector<llvm::GlobalVariable *> consts;
  if (symbols) {
    for (size_t i = 0; i < p.Constants.size(); ++i) {
      const ConstantData &c = p.Constants[i];
      size_t size = std::max<size_t>((size_t)c.Count, 1) * dtypeSize(c.Type);
      auto *ty = llvm::ArrayType::get(llvm::Type::getInt8Ty(me.Ctx), size);
      auto *g = new llvm::GlobalVariable(me.M, ty, true, llvm::GlobalValue::ExternalLinkage,
                                         nullptr, (*symbols)[i]);
      g->setVisibility(llvm::GlobalValue::HiddenVisibility);
      g->setDSOLocal(true);
      g->setAlignment(llvm::Align(64));
      consts.push_back(g);
    }
    return consts;
  }
  for (auto &c : p.Constants) {
    llvm::Type *et = me.memoryType(c.Type);
    size_t n = std::max<size_t>((size_t)c.Count, 1);
    const size_t size = n * dtypeSize(c.Type);
    std::string padded;
    llvm::StringRef bytes((const char *)c.Bytes.data(), c.Bytes.size());
    if (bytes.size() != size) {
      padded.assign(c.Bytes.begin(), c.Bytes.end());
      padded.resize(size, '\0');
      bytes = padded;
    }
    MLCC_CHECK(et->isFloatTy() || et->isDoubleTy() || et->isIntegerTy(),
               "constant of type " << dtypeName(c.Type));
    // Little-endian targets get the bytes as they are, an i8 array: the
    // object writer copies them in one piece (a float array is written
    // element by element, seconds for a model's weights).
    llvm::Constant *init =
        me.DL.isLittleEndian()
            ? llvm::ConstantDataArray::getRaw(bytes, size, llvm::Type::getInt8Ty(me.Ctx))
            : llvm::ConstantDataArray::getRaw(bytes, n, et);
    auto *g = new llvm::GlobalVariable(me.M, init->getType(), true,
                                       llvm::GlobalValue::InternalLinkage, init, c.Name);
    g->setAlignment(llvm::Align(64));
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    consts.push_back(g);
  }
  return consts;
}

/// The function of kernel `k`, named `name`: its parameters, then the run
/// options. Its body only where `linkage` is not external (a declaration
/// of a kernel defined in a module of its own).
llvm::Function *emitKernel(ModuleEmitter &me, const Kernel &k, const std::string &name,
                           llvm::GlobalValue::LinkageTypes linkage) {
  llvm::LLVMContext &ctx = me.Ctx;
  llvm::Type *ptr = me.PtrTy;
  std::vector<llvm::Type *> params(k.Params.size() + 1, ptr); // + options
  auto *fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  auto *f = llvm::Function::Create(fty, linkage, name, me.M);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr(llvm::Attribute::NoInline);
  for (size_t i = 0; i < k.Params.size(); ++i) {
    if (i >= k.Overlapping.size() || !k.Overlapping[i])
      f->addParamAttr((unsigned)i, llvm::Attribute::NoAlias);
    f->addParamAttr((unsigned)i, llvm::Attribute::NoCapture);
    f->getArg((unsigned)i)->setName(k.Params[i]->Name);
  }
  if (linkage == llvm::GlobalValue::ExternalLinkage) {
    f->setVisibility(llvm::GlobalValue::HiddenVisibility);
    f->setDSOLocal(true);
    return f;
  }
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto *start = llvm::BasicBlock::Create(ctx, "start", f);
  KernelEmitter ke(me, f, entry);
  for (size_t i = 0; i < k.Params.size(); ++i)
    ke.bindParam(k.Params[i].get(), f->getArg((unsigned)i));
  ke.setOptions(f->getArg((unsigned)k.Params.size()));
  ke.setInOrder(k.InOrder);
  ke.builder().SetInsertPoint(start);
  ke.stmt(k.Body);
  ke.builder().CreateRetVoid();
  IRBuilder<> eb(entry);
  eb.CreateBr(start);
  return f;
}

} // namespace

InputsLayout inputsLayout(ModuleEmitter &me, const Program &p) {
  llvm::Type *i32 = llvm::Type::getInt32Ty(me.Ctx), *i64 = llvm::Type::getInt64Ty(me.Ctx);
  std::vector<llvm::Type *> inputFieldTypes(p.Inputs.size(), me.PtrTy);
  if (p.Inputs.empty())
    inputFieldTypes.push_back(i32);
  const size_t inputFields = inputFieldTypes.size();
  for (size_t k = 0; k < p.Dims.size(); ++k)
    inputFieldTypes.push_back(i64);
  auto *inputsTy = llvm::StructType::get(me.Ctx, inputFieldTypes);
  return {inputsTy, inputFields};
}

namespace {

std::unique_ptr<llvm::Module> newModule(const std::string &name, llvm::LLVMContext &ctx,
                                        const std::string &triple,
                                        const llvm::DataLayout &layout) {
  auto mod = std::make_unique<llvm::Module>(name, ctx);
  mod->setTargetTriple(triple);
  mod->setDataLayout(layout);
  return mod;
}

void verified(const llvm::Module &m) {
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(m, &es))
    fail(ErrorKind::Internal) << "internal error: invalid LLVM module: " << es.str().substr(0, 1000);
}

} // namespace

std::unique_ptr<llvm::Module> emitModule(const Program &p, llvm::LLVMContext &ctx,
                                         const std::string &triple,
                                         const llvm::DataLayout &layout,
                                         const EmitFeatures &features,
                                         const std::vector<std::string> *kernelSymbols,
                                         const std::vector<std::string> *constantSymbols) {
  auto mod = newModule(p.Name, ctx, triple, layout);
  ModuleEmitter me(ctx, *mod, layout, features);
  std::vector<llvm::GlobalVariable *> constants = emitConstants(me, p, constantSymbols);
  std::vector<llvm::Function *> kernels;
  for (size_t i = 0; i < p.Kernels.size(); ++i)
    kernels.push_back(kernelSymbols ? emitKernel(me, p.Kernels[i], (*kernelSymbols)[i],
                                                 llvm::GlobalValue::ExternalLinkage)
                                    : emitKernel(me, p.Kernels[i], p.Kernels[i].Name,
                                                 llvm::GlobalValue::InternalLinkage));
  const InputsLayout inputs = inputsLayout(me, p);
  llvm::Function *runWith = emitRunWith(me, p, inputs, constants, kernels);
  emitRunWrappers(me, p, inputs, runWith);
  emitModelInfo(me, p);
  verified(*mod);
  return mod;
}

std::unique_ptr<llvm::Module> emitKernelModule(const Kernel &k, const std::string &symbol,
                                               llvm::LLVMContext &ctx, const std::string &triple,
                                               const llvm::DataLayout &layout,
                                               const EmitFeatures &features) {
  auto mod = newModule(symbol, ctx, triple, layout);
  ModuleEmitter me(ctx, *mod, layout, features);
  llvm::Function *f = emitKernel(me, k, symbol, llvm::GlobalValue::WeakODRLinkage);
  f->setVisibility(llvm::GlobalValue::HiddenVisibility);
  f->setDSOLocal(true);
  verified(*mod);
  return mod;
}

} // namespace mlcc::llvmgen
