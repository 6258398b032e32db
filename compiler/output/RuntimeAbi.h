//===- RuntimeAbi.h - The library's entry contract, from runtime-c/mlcc.h -===//
//
// runtime-c/mlcc.h is the contract between a generated library and its
// caller: the status codes, mlcc_run_options, mlcc_tensor_info and
// mlcc_model_info. The C and CUDA emitters write C that includes it; the
// LLVM emitter builds the same structs as LLVM types for the target (whose
// pointers and size_t may be 32 bits). This header is where that emitter
// and the in-process runners take the layouts from: each struct's fields as
// a list of kinds, checked by static_assert against the header's own
// structs on the machine that builds mlcc, so that a change to mlcc.h not
// made here fails the build instead of the generated code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime-c/mlcc.h"

#include <cstddef>
#include <cstdint>

namespace mlcc::abi {

/// The kind of a struct field, as the target lays it out.
enum class Field : uint8_t { Ptr, I32, Size, F32, I64 };

constexpr size_t hostSize(Field f) {
  return f == Field::Ptr ? sizeof(void *) : f == Field::Size ? sizeof(size_t) : f == Field::I64 ? 8 : 4;
}

/// The offset of field `i` of `fields` with natural alignment (as C lays
/// out structs of these kinds on every target mlcc supports).
template <size_t N> constexpr size_t hostOffset(const Field (&fields)[N], size_t i) {
  size_t at = 0;
  for (size_t k = 0; k <= i; ++k) {
    size_t s = hostSize(fields[k]);
    at = (at + s - 1) / s * s;
    if (k < i)
      at += s;
  }
  return at;
}

template <size_t N> constexpr size_t hostStructSize(const Field (&fields)[N]) {
  size_t end = hostOffset(fields, N - 1) + hostSize(fields[N - 1]), align = 1;
  for (Field f : fields)
    align = hostSize(f) > align ? hostSize(f) : align;
  return (end + align - 1) / align * align;
}

/// mlcc_run_options.
struct RunOptions {
  static constexpr Field Fields[] = {Field::Ptr, Field::Ptr, Field::I32, Field::Ptr, Field::Ptr};
  enum : unsigned { ParallelFor, Pool, NumWorkers, OnKernel, HookContext };
};
static_assert(hostOffset(RunOptions::Fields, RunOptions::ParallelFor) ==
              offsetof(mlcc_run_options, parallel_for));
static_assert(hostOffset(RunOptions::Fields, RunOptions::Pool) == offsetof(mlcc_run_options, pool));
static_assert(hostOffset(RunOptions::Fields, RunOptions::NumWorkers) ==
              offsetof(mlcc_run_options, num_workers));
static_assert(hostOffset(RunOptions::Fields, RunOptions::OnKernel) ==
              offsetof(mlcc_run_options, on_kernel));
static_assert(hostOffset(RunOptions::Fields, RunOptions::HookContext) ==
              offsetof(mlcc_run_options, hook_context));
static_assert(hostStructSize(RunOptions::Fields) == sizeof(mlcc_run_options));

/// mlcc_tensor_info.
struct TensorInfo {
  static constexpr Field Fields[] = {Field::Ptr,  Field::I32, Field::I32, Field::Ptr,
                                     Field::Size, Field::F32, Field::I32};
  enum : unsigned { Name, DType, Rank, Shape, SizeBytes, Scale, ZeroPoint };
};
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::Name) == offsetof(mlcc_tensor_info, name));
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::DType) ==
              offsetof(mlcc_tensor_info, dtype));
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::Rank) == offsetof(mlcc_tensor_info, rank));
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::Shape) ==
              offsetof(mlcc_tensor_info, shape));
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::SizeBytes) ==
              offsetof(mlcc_tensor_info, size_bytes));
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::Scale) ==
              offsetof(mlcc_tensor_info, scale));
static_assert(hostOffset(TensorInfo::Fields, TensorInfo::ZeroPoint) ==
              offsetof(mlcc_tensor_info, zero_point));
static_assert(hostStructSize(TensorInfo::Fields) == sizeof(mlcc_tensor_info));

/// mlcc_model_info.
struct DimInfo {
  static constexpr Field Fields[] = {Field::Ptr, Field::I64, Field::I64};
  enum : unsigned { Name, Min, Max };
};
static_assert(hostOffset(DimInfo::Fields, DimInfo::Name) == offsetof(mlcc_dim_info, name));
static_assert(hostOffset(DimInfo::Fields, DimInfo::Min) == offsetof(mlcc_dim_info, min));
static_assert(hostOffset(DimInfo::Fields, DimInfo::Max) == offsetof(mlcc_dim_info, max));
static_assert(hostStructSize(DimInfo::Fields) == sizeof(mlcc_dim_info));

struct ModelInfo {
  static constexpr Field Fields[] = {Field::Ptr,  Field::Ptr,  Field::I32,  Field::Ptr,
                                     Field::I32,  Field::Ptr,  Field::Size, Field::Size,
                                     Field::Size, Field::I32,  Field::Ptr};
  enum : unsigned {
    Name, MlccVersion, NumInputs, Inputs, NumOutputs, Outputs, ArenaSize, ArenaAlign, WeightsSize,
    NumDims, Dims
  };
};
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::Name) == offsetof(mlcc_model_info, name));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::MlccVersion) ==
              offsetof(mlcc_model_info, mlcc_version));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::NumInputs) ==
              offsetof(mlcc_model_info, num_inputs));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::Inputs) ==
              offsetof(mlcc_model_info, inputs));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::NumOutputs) ==
              offsetof(mlcc_model_info, num_outputs));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::Outputs) ==
              offsetof(mlcc_model_info, outputs));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::ArenaSize) ==
              offsetof(mlcc_model_info, arena_size));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::ArenaAlign) ==
              offsetof(mlcc_model_info, arena_align));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::WeightsSize) ==
              offsetof(mlcc_model_info, weights_size));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::NumDims) ==
              offsetof(mlcc_model_info, num_dims));
static_assert(hostOffset(ModelInfo::Fields, ModelInfo::Dims) == offsetof(mlcc_model_info, dims));
static_assert(hostStructSize(ModelInfo::Fields) == sizeof(mlcc_model_info));

} // namespace mlcc::abi
