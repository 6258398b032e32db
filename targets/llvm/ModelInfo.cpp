//===- ModelInfo.cpp - The library's model info ---------------------------===//
//
// NAME_info() returns a constant mlcc_model_info (compiler/output/
// RuntimeAbi.h, runtime-c/mlcc.h): the model's name and mlcc's version, a
// table of the inputs and one of the outputs (name, type, shape, size,
// quantization), the arena's size and alignment, the weights' size, and the
// run-time dimensions with their bounds; every struct laid out by the
// target's data layout, every string and table a private global.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "compiler/output/Header.h"

#include <llvm/IR/Constants.h>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::IRBuilder;

namespace {

/// A private global holding the string `s` as a C string.
llvm::Constant *cstr(ModuleEmitter &me, const std::string &s, const std::string &name) {
  auto *init = llvm::ConstantDataArray::getString(me.Ctx, s, true);
  auto *g = new llvm::GlobalVariable(me.M, init->getType(), true,
                                     llvm::GlobalValue::PrivateLinkage, init, name);
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return g;
}

/// The table of `ts` (mlcc_tensor_info rows of `tensorInfoTy`), or null
/// when there are none; `kind` names its globals.
llvm::Constant *tensorTable(ModuleEmitter &me, const Program &p, llvm::StructType *tensorInfoTy,
                            const std::vector<IoTensor> &ts, const std::string &kind) {
  llvm::Type *i32 = llvm::Type::getInt32Ty(me.Ctx), *i64 = llvm::Type::getInt64Ty(me.Ctx),
             *f32 = llvm::Type::getFloatTy(me.Ctx), *size = me.IndexTy;
  if (ts.empty())
    return llvm::ConstantPointerNull::get(me.PtrTy);
  std::vector<llvm::Constant *> rows;
  for (size_t i = 0; i < ts.size(); ++i) {
    std::vector<llvm::Constant *> dims;
    for (int64_t d : output::infoShape(ts[i]))
      dims.push_back(llvm::ConstantInt::get(i64, (uint64_t)d));
    if (dims.empty())
      dims.push_back(llvm::ConstantInt::get(i64, 0));
    auto *shapeInit = llvm::ConstantArray::get(llvm::ArrayType::get(i64, dims.size()), dims);
    auto *shape = new llvm::GlobalVariable(me.M, shapeInit->getType(), true,
                                           llvm::GlobalValue::PrivateLinkage, shapeInit,
                                           p.Name + "_" + kind + std::to_string(i) + "_shape");
    rows.push_back(llvm::ConstantStruct::get(
        tensorInfoTy,
        {cstr(me, ts[i].Name, p.Name + "_" + kind + std::to_string(i) + "_name"),
         llvm::ConstantInt::get(i32, (uint64_t)ts[i].Type),
         llvm::ConstantInt::get(i32, ts[i].Dims.size()), shape,
         llvm::ConstantInt::get(size, (uint64_t)ts[i].bytes()),
         llvm::ConstantFP::get(f32, (double)(float)ts[i].Scale),
         llvm::ConstantInt::get(i32, (uint64_t)ts[i].ZeroPoint)}));
  }
  auto *init = llvm::ConstantArray::get(llvm::ArrayType::get(tensorInfoTy, rows.size()), rows);
  return new llvm::GlobalVariable(me.M, init->getType(), true,
                                  llvm::GlobalValue::PrivateLinkage, init,
                                  p.Name + "_" + kind + "_info");
}

/// The table of the run-time dimensions (mlcc_dim_info rows), or null when
/// there are none.
llvm::Constant *dimTable(ModuleEmitter &me, const Program &p) {
  llvm::Type *i64 = llvm::Type::getInt64Ty(me.Ctx), *ptr = me.PtrTy, *size = me.IndexTy;
  llvm::Constant *table = llvm::ConstantPointerNull::get(me.PtrTy);
  if (!p.Dims.empty()) {
    auto *dimInfoTy = abiStruct(me.Ctx, abi::DimInfo::Fields, ptr, size, "mlcc_dim_info");
    std::vector<llvm::Constant *> rows;
    for (size_t k = 0; k < p.Dims.size(); ++k)
      rows.push_back(llvm::ConstantStruct::get(
          dimInfoTy, {cstr(me, p.Dims[k].Name, p.Name + "_dim" + std::to_string(k) + "_name"),
                      llvm::ConstantInt::get(i64, (uint64_t)p.Dims[k].Min),
                      llvm::ConstantInt::get(i64, (uint64_t)p.Dims[k].Max)}));
    auto *init = llvm::ConstantArray::get(llvm::ArrayType::get(dimInfoTy, rows.size()), rows);
    table = new llvm::GlobalVariable(me.M, init->getType(), true,
                                     llvm::GlobalValue::PrivateLinkage, init, p.Name + "_dim_info");
  }
  return table;
}

} // namespace

void emitModelInfo(ModuleEmitter &me, const Program &p) {
  // NAME_info(): constant structs laid out by the target's data layout.
  llvm::LLVMContext &ctx = me.Ctx;
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx), *ptr = me.PtrTy, *size = me.IndexTy;
  auto *tensorInfoTy = abiStruct(ctx, abi::TensorInfo::Fields, ptr, size, "mlcc_tensor_info");
  auto *modelInfoTy = abiStruct(ctx, abi::ModelInfo::Fields, ptr, size, "mlcc_model_info");
  llvm::Constant *dims = dimTable(me, p);
  llvm::Constant *infoInit = llvm::ConstantStruct::get(
      modelInfoTy,
      {cstr(me, p.Name, p.Name + "_name"), cstr(me, output::mlccVersion(), p.Name + "_version"),
       llvm::ConstantInt::get(i32, p.Inputs.size()),
       tensorTable(me, p, tensorInfoTy, p.Inputs, "input"),
       llvm::ConstantInt::get(i32, p.Outputs.size()),
       tensorTable(me, p, tensorInfoTy, p.Outputs, "output"),
       llvm::ConstantInt::get(size, (uint64_t)p.ArenaSize),
       llvm::ConstantInt::get(size, (uint64_t)p.ArenaAlign),
       llvm::ConstantInt::get(size, (uint64_t)p.weightBytes()),
       llvm::ConstantInt::get(i32, p.Dims.size()), dims});
  auto *infoVar = new llvm::GlobalVariable(me.M, modelInfoTy, true,
                                           llvm::GlobalValue::PrivateLinkage, infoInit,
                                           p.Name + "_model_info");
  auto *infoFn = llvm::Function::Create(llvm::FunctionType::get(ptr, {}, false),
                                        llvm::GlobalValue::ExternalLinkage,
                                        p.Name + "_info", me.M);
  infoFn->addFnAttr(llvm::Attribute::NoUnwind);
  IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", infoFn));
  b.CreateRet(infoVar);
}

} // namespace mlcc::llvmgen
