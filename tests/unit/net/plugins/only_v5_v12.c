/* A plugin built for NCCL releases this tool does not drive: it exports only
   ncclNetPlugin_v5 and ncclNetPlugin_v12. The loader must name both and refuse. */
struct fake_net { const char* name; void* fns[24]; };
__attribute__((visibility("default"))) const struct fake_net ncclNetPlugin_v5 = {"too-old", {0}};
__attribute__((visibility("default"))) const struct fake_net ncclNetPlugin_v12 = {"too-new", {0}};
