#pragma once
// One call table over ncclNet v6..v11: the plugin's vtable seen through v11-shaped
// calls (size_t sizes, one buffer per irecv), so the rest of the code has no version
// switches. Fields a version lacks read as NCCL reads them; calls it lacks return
// kInternalError after `has_*` said no.
#include <cstddef>
#include <memory>
#include <string>

#include "p2pscope/netplugin.hpp"
#include "transport/net/abi.hpp"

namespace p2pscope::net::detail {

class Ops {
 public:
  virtual ~Ops() = default;
  int version = 0;
  std::string name;
  // The largest size one isend/irecv can carry in this ABI (INT_MAX before v9).
  std::size_t max_call_bytes = static_cast<std::size_t>(-1);

  virtual abi::Result init(abi::Logger log) = 0;
  virtual abi::Result finalize() = 0;  // v11: finalize(ctx); earlier: nothing
  virtual abi::Result devices(int* ndev) = 0;
  virtual abi::Result properties(int dev, DeviceProps* out) = 0;
  virtual abi::Result listen(int dev, void* handle, void** listen_comm) = 0;
  virtual abi::Result connect(int dev, void* handle, void** send_comm, abi::DeviceHandle** dev_handle) = 0;
  virtual abi::Result accept(void* listen_comm, void** recv_comm, abi::DeviceHandle** dev_handle) = 0;
  virtual abi::Result reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) = 0;
  virtual abi::Result reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset,
                                    int fd, void** mhandle) = 0;
  virtual abi::Result dereg_mr(void* comm, void* mhandle) = 0;
  virtual abi::Result isend(void* comm, void* data, std::size_t size, int tag, void* mhandle, void** request) = 0;
  virtual abi::Result irecv(void* comm, void* data, std::size_t size, int tag, void* mhandle, void** request) = 0;
  virtual abi::Result iflush(void* comm, void* data, int size, void* mhandle, void** request) = 0;
  virtual abi::Result test(void* request, int* done, int* size) = 0;
  virtual abi::Result close_send(void* comm) = 0;
  virtual abi::Result close_recv(void* comm) = 0;
  virtual abi::Result close_listen(void* comm) = 0;
  virtual bool has_dmabuf() const = 0;
  virtual bool has_device_mr() const = 0;
  virtual abi::Result get_device_mr(void* comm, void* mhandle, void** dptr) = 0;
  virtual abi::Result irecv_consumed(void* comm, void* request) = 0;
};

// Wraps the exported struct `table` of the given ABI version (6..11).
std::unique_ptr<Ops> make_ops(int version, const void* table);

// The logger handed to plugins: lines go to a process-wide ring (NCCL's logger has
// no user pointer, so a plugin's lines cannot be routed to one object).
extern "C" void plugin_logger(abi::LogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                              ...);
std::uint64_t log_mark();                              // sequence number of the next line
std::vector<std::string> log_since(std::uint64_t mark, bool warn_only);
void log_note(const std::string& line);                // our own notes (close errors)

}  // namespace p2pscope::net::detail
