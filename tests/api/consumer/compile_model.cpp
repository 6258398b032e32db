// compile_model MODEL.onnx OUT.a TARGET: compiles a model with the mlcc
// library (not the mlcc program) and writes the library and its header;
// prints the figures the header states. A compile error is one line on
// stderr and the command line's exit status.
#include <mlcc/Compiler.h>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: compile_model MODEL.onnx OUT.a TARGET\n");
    return 2;
  }
  mlcc::CompileOptions o;
  o.Model = argv[1];
  o.Target = argv[3];
  o.ProgressMode = "never";
  try {
    mlcc::Library lib = mlcc::compile(o);
    lib.write(argv[2]);
    const mlcc::LibraryInfo &i = lib.info();
    std::printf("name %s\narena %lld\nweights %lld\ncode %lld\ninputs %zu\noutputs %zu\n",
                i.Name.c_str(), (long long)i.ArenaBytes, (long long)i.WeightBytes,
                (long long)i.CodeBytes, i.Inputs.size(), i.Outputs.size());
    return 0;
  } catch (const mlcc::CompileError &e) {
    std::fprintf(stderr, "compile_model: %s\n", e.what());
    return mlcc::exitStatus(e.kind());
  }
}
