/* A shared object that is not a net plugin (a tuner plugin, say): no ncclNetPlugin_vN. */
struct fake_tuner { const char* name; void* fns[4]; };
__attribute__((visibility("default"))) const struct fake_tuner ncclTunerPlugin_v3 = {"not-a-net-plugin", {0}};
