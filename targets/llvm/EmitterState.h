//===- EmitterState.h - The LLVM emitter's shared classes -----*- C++ -*-===//
//
// Private to targets/llvm: the state the pieces of the kernel IR to LLVM IR
// translation share. ModuleEmitter is what is module-wide (types, libm
// declarations, the narrow float conversion functions); KernelEmitter
// translates one kernel into one function, its members defined across
// the files named at each group below; the last declarations are the
// steps of emitModule (LLVMEmitter.cpp) that build the library's entry
// points and model info.
//
// The public interface is targets/llvm/LLVMEmitter.h; this header does not
// include it (LLVMEmitter.cpp includes this one), so EmitFeatures is only
// declared here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "compiler/output/RuntimeAbi.h"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace mlcc::llvmgen {

struct EmitFeatures;

/// The target's LLVM type of a runtime struct (compiler/output/RuntimeAbi.h):
/// a named type when `name` is given, else a literal one.
template <size_t N>
llvm::StructType *abiStruct(llvm::LLVMContext &ctx, const abi::Field (&fields)[N],
                            llvm::Type *ptr, llvm::Type *size, const char *name) {
  std::vector<llvm::Type *> types;
  for (abi::Field f : fields)
    types.push_back(f == abi::Field::Ptr    ? ptr
                    : f == abi::Field::Size ? size
                    : f == abi::Field::F32  ? llvm::Type::getFloatTy(ctx)
                    : f == abi::Field::I64  ? llvm::Type::getInt64Ty(ctx)
                                            : llvm::Type::getInt32Ty(ctx));
  return name ? llvm::StructType::create(ctx, types, name) : llvm::StructType::get(ctx, types);
}

/// Module-wide state: types, helper functions, libm declarations.
class ModuleEmitter {
public:
  ModuleEmitter(llvm::LLVMContext &ctx, llvm::Module &m, const llvm::DataLayout &dl,
                const EmitFeatures &features)
      : Ctx(ctx), M(m), DL(dl), Features(features) {
    IndexTy = llvm::IntegerType::get(Ctx, DL.getPointerSizeInBits(0));
    PtrTy = llvm::PointerType::get(Ctx, 0);
  }

  llvm::LLVMContext &Ctx;
  llvm::Module &M;
  const llvm::DataLayout &DL;
  const EmitFeatures &Features;
  llvm::IntegerType *IndexTy;
  llvm::PointerType *PtrTy;

  // --- LLVMEmitter.cpp ---
  /// Type of a value of `t` in registers.
  llvm::Type *valueType(DType t);
  /// Type of an element of `t` in memory (Bool is a byte).
  llvm::Type *memoryType(DType t);
  /// A libm function `name` of signature T(T[, T]).
  llvm::FunctionCallee libm(const std::string &name, llvm::Type *t, int args);

  // --- NarrowFloats.cpp ---
  /// 16-bit float <-> f32 conversions, of scalars or of vectors of `lanes`.
  llvm::Function *halfToFloat(unsigned lanes) {
    return float16Helper("mlcc.h2f", true, false, lanes);
  }
  llvm::Function *floatToHalf(unsigned lanes) {
    return float16Helper("mlcc.f2h", false, false, lanes);
  }
  llvm::Function *bf16ToFloat(unsigned lanes) {
    return float16Helper("mlcc.bf2f", true, true, lanes);
  }
  llvm::Function *floatToBf16(unsigned lanes) {
    return float16Helper("mlcc.f2bf", false, true, lanes);
  }

  /// float8 <-> f32 conversions of type `t`: the selects-only translation of
  /// compiler/support/Float8.h (float8ToFloat / floatToFloat8).
  llvm::Function *float8ToFloat(DType t, unsigned lanes) {
    return float8Helper(std::string("mlcc.") + dtypeName(t) + "2f", t, true, lanes);
  }
  llvm::Function *floatToFloat8(DType t, unsigned lanes) {
    return float8Helper(std::string("mlcc.f2") + dtypeName(t), t, false, lanes);
  }

private:
  llvm::Function *newHelper(const std::string &name, llvm::Type *ret, llvm::Type *arg,
                            llvm::IRBuilder<> &b);
  llvm::Function *float8Helper(const std::string &name, DType t, bool toFloat, unsigned lanes);
  llvm::Function *float16Helper(const std::string &name, bool toFloat, bool bf16,
                                unsigned lanes);
};

/// Translates one kernel into a function.
class KernelEmitter {
public:
  KernelEmitter(ModuleEmitter &me, llvm::Function *f, llvm::BasicBlock *entry)
      : ME(me), F(f), B(me.Ctx), Entry(entry) {
    // a * b + c may become one fused multiply-add (at most one rounding
    // fewer); nothing else about floating point is relaxed.
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    B.setFastMathFlags(fmf);
  }

  void bindParam(const kir::BufferNode *buf, llvm::Value *ptr) { bind(buf, ptr); }
  /// The kernel's `const mlcc_run_options *` (may be null at run time).
  void setOptions(llvm::Value *opts) { Opts = opts; }
  /// Kernel::InOrder: Parallel loops run serially, never through parallel_for.
  void setInOrder(bool inOrder) { InOrder = inOrder; }

  /// Emits `s` at the builder's insertion point (Statements.cpp).
  void stmt(const kir::Stmt &s);

  llvm::IRBuilder<> &builder() { return B; }

private:
  /// Vector stores of one buffer whose lanes are Stride apart, at base +
  /// 0, ..., base + G - 1 (kir::strideGroups); Members and Values by
  /// offset. With G == Stride they are interleaved (the outputs of a tile
  /// with a strided window), else transposed (a tile stored column by
  /// column into rows of the output).
  struct StoreGroup {
    std::vector<const kir::StmtNode *> Members;
    std::vector<llvm::Value *> Values;
    size_t Evaluated = 0;
  };

  // --- Statements.cpp: statements and loops ---
  void block(const kir::StmtNode &s);
  void store(const kir::StmtNode &s);
  void ifThenElse(const kir::StmtNode &s);
  void alloc(const kir::StmtNode &s);
  void forLoop(const kir::StmtNode &s);
  void parallelLoop(const kir::StmtNode &s);
  llvm::Function *taskFunction(const kir::StmtNode &s, llvm::StructType *ctxTy,
                               const std::vector<const kir::BufferNode *> &bufs,
                               const std::vector<const kir::VarNode *> &vars);
  llvm::Value *address(const kir::BufferNode *buf, llvm::Value *index);

  // --- StridedAccess.cpp: strided and transposed vector loads and stores ---
  std::vector<StoreGroup> storeGroups(const std::vector<kir::Stmt> &body);
  void storeGroup(const StoreGroup &g);
  std::vector<const kir::ExprNode *> loadTransposedGroups(const std::vector<kir::Stmt> &body);
  std::vector<llvm::Value *> transposeRows(const std::vector<llvm::Value *> &rows, unsigned L);
  std::vector<llvm::Value *> untransposeRows(const std::vector<llvm::Value *> &groups,
                                             unsigned L);
  std::vector<llvm::Value *> rowsToRuns(std::vector<llvm::Value *> rows, unsigned L);
  std::vector<llvm::Value *> runsToRows(const std::vector<llvm::Value *> &runs, unsigned G);
  std::vector<llvm::Value *> transposeConcatenated(const std::vector<llvm::Value *> &vs);
  llvm::Value *gather(const kir::ExprNode &e);
  llvm::Value *stridedLoad(const kir::ExprNode &e);
  llvm::Value *concatenate(std::vector<llvm::Value *> parts);

  // --- Expressions.cpp: expressions, operators and casts ---
  llvm::Value *expr(const kir::Expr &e);
  llvm::Value *load(const kir::Expr &e);
  llvm::Constant *constant(const kir::ExprNode &e);
  llvm::Value *unary(kir::UnOp op, DType t, llvm::Value *a);
  llvm::Value *binary(kir::BinOp op, DType t, llvm::Value *a, llvm::Value *b);
  llvm::Value *floatBinary(kir::BinOp op, DType t, llvm::Value *a, llvm::Value *b);
  llvm::Value *integerBinary(kir::BinOp op, DType t, llvm::Value *a, llvm::Value *b);
  llvm::Value *castValue(DType to, DType from, llvm::Value *a);
  llvm::Value *intrinsic(llvm::Intrinsic::ID id, llvm::Value *a, llvm::Value *b = nullptr);
  llvm::Value *libcall(const char *name, DType t, llvm::Value *a,
                       llvm::Value *b = nullptr);

  // --- DotProducts.cpp: integer dot products, in the target's instructions
  // or in generic IR ---
  llvm::Value *fusedDot(const kir::Expr &e);
  llvm::Value *pairSumsDot4(llvm::Value *acc, llvm::Value *a, llvm::Value *b);
  llvm::Value *maddDot4(int lanes, llvm::Value *acc, llvm::Value *a, llvm::Value *b);
  bool hasMadd(int lanes) const;
  llvm::Value *pmaddwd(llvm::Value *a, llvm::Value *b);
  llvm::Value *dot2(llvm::Value *a, llvm::Value *b);
  llvm::Value *dot4(llvm::Value *a, llvm::Value *b, bool signedA = false);

  // --- IntegerForms.cpp: integer patterns with a better instruction than
  // the IR's literal form ---
  static int signedBits(const kir::ExprNode *x);
  llvm::Value *wideningMul(const kir::ExprNode &e);
  static const kir::ExprNode *zeroExtendedByte(const kir::ExprNode *x, int lanes = 1);
  llvm::Value *wordOfBytes(const kir::ExprNode &e);
  llvm::Value *sextBytePairs(llvm::Value *a, bool odd, bool zext = false);
  llvm::Value *mulHigh(llvm::Value *a, llvm::Value *b);

  // --- the scopes: buffers and variables bound to values ---
  void bind(const kir::BufferNode *b, llvm::Value *v) {
    if (Buffers.emplace(b, v).second)
      BufferOrder.push_back(b);
    else
      Buffers[b] = v;
  }
  void bind(const kir::VarNode *x, llvm::Value *v) {
    if (Vars.emplace(x, v).second)
      VarOrder.push_back(x);
    else
      Vars[x] = v;
  }
  void unbind(const kir::BufferNode *b) {
    Buffers.erase(b);
    BufferOrder.erase(std::find(BufferOrder.begin(), BufferOrder.end(), b));
  }
  void unbind(const kir::VarNode *x) {
    Vars.erase(x);
    VarOrder.erase(std::find(VarOrder.begin(), VarOrder.end(), x));
  }

  ModuleEmitter &ME;
  llvm::Function *F;
  llvm::IRBuilder<> B;
  llvm::BasicBlock *Entry;
  std::map<const kir::BufferNode *, llvm::Value *> Buffers;
  std::map<const kir::VarNode *, llvm::Value *> Vars;
  /// The keys of Buffers and Vars in the order they were bound (scopes
  /// nest), which a parallel task's context follows: an order of addresses
  /// would depend on the heap, and the code with it.
  std::vector<const kir::BufferNode *> BufferOrder;
  std::vector<const kir::VarNode *> VarOrder;
  /// The loads of transposed groups, loaded ahead (loadTransposedGroups).
  std::map<const kir::ExprNode *, llvm::Value *> Transposed;
  llvm::Value *Opts = nullptr;
  bool InOrder = false;
};

// --- the steps of emitModule ---

/// The NAME_inputs struct: the input pointers (or `int unused_` when there
/// are none), then an int64_t per run-time dimension.
struct InputsLayout {
  llvm::StructType *Type;
  size_t PointerFields; ///< the fields before the dimensions
};
InputsLayout inputsLayout(ModuleEmitter &me, const kir::Program &p);

/// NAME_run_with(in, out, arena, arena_size, options): the arguments
/// checked, then the calls (RunFunctions.cpp).
llvm::Function *emitRunWith(ModuleEmitter &me, const kir::Program &p,
                            const InputsLayout &inputs,
                            const std::vector<llvm::GlobalVariable *> &constants,
                            const std::vector<llvm::Function *> &kernels);
/// NAME_run and NAME_run_ptrs: NAME_run_with without options
/// (RunFunctions.cpp).
void emitRunWrappers(ModuleEmitter &me, const kir::Program &p, const InputsLayout &inputs,
                     llvm::Function *runWith);
/// NAME_info() and the constant tables it returns (ModelInfo.cpp).
void emitModelInfo(ModuleEmitter &me, const kir::Program &p);

} // namespace mlcc::llvmgen
