// What `topo --net-plugin` and `doctor` show: devices, and the plugin NCCL would load.
#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "p2pscope/text.hpp"
#include "transport/net/loader.hpp"
#include "transport/net/plugin_impl.hpp"

namespace p2pscope::net {

Resolution resolve_like_nccl(const std::string& value) {
  Resolution r;
  r.request = value;
  if (value == "none") {
    r.disabled = true;
    r.reason = "NCCL_NET_PLUGIN=none: NCCL uses its internal IB/socket transports";
    return r;
  }
  std::string errors;
  for (const std::string& item : split_fields(value, ',')) {  // NCCL takes the first that loads
    try {
      detail::OpenedLib lib = detail::open_plugin_file(item);
      r.found = true;
      r.file = lib.file;
      r.path = lib.path;
      r.versions = lib.versions;
      dlclose(lib.dl);
      bool usable = false;
      for (int v : r.versions) usable |= v >= kMinAbiVersion && v <= kMaxAbiVersion;
      if (!usable)
        r.reason = r.versions.empty() ? "exports no ncclNetPlugin_vN symbol: NCCL would skip it"
                                      : "exports no version NCCL 2.28 loads (v6..v11): NCCL would skip it";
      return r;
    } catch (const Error& ex) {
      errors += (errors.empty() ? "" : "; ") + std::string(ex.what());
    }
  }
  r.reason = errors + (value.empty() ? " (NCCL then uses its internal IB/socket transports)" : "");
  return r;
}

nlohmann::json resolution_json(const Resolution& r) {
  return {{"nccl_net_plugin", r.request.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.request)},
          {"disabled", r.disabled},
          {"found", r.found},
          {"file", r.file},
          {"path", r.path},
          {"versions", r.versions},
          {"reason", r.reason}};
}

std::string gpu_memory_verdict(const Plugin& p) {
  int cuda = 0, dmabuf = 0, unpack = 0;
  for (const auto& d : p.devices()) {
    cuda += d.cuda_memory();
    dmabuf += d.dmabuf();
    unpack += d.device_type == DeviceType::unpack;
  }
  const auto n = p.devices().size();
  if (cuda == 0)
    return fmt::format("no: host memory only on all {} devices (ptrSupport {}); GPU buffers would be staged "
                       "through host memory", n, ptr_support_text(p.devices().front().ptr_support));
  std::string how = dmabuf ? fmt::format("CUDA pointers, DMA-BUF on {}/{}", dmabuf, n) : "CUDA pointers (no DMA-BUF)";
  if (unpack) how += fmt::format(", UNPACK device type on {}/{} (received bytes land in bounce buffers and a "
                                 "kernel scatters them)", unpack, n);
  return fmt::format("yes: {} of {} devices take GPU memory ({})", cuda, n, how);
}

nlohmann::json properties_json(const Plugin& p) {
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : p.devices()) {
    nlohmann::json ptr = nlohmann::json::array();
    if (d.host_memory()) ptr.push_back("host");
    if (d.cuda_memory()) ptr.push_back("cuda");
    if (d.dmabuf()) ptr.push_back("dmabuf");
    devs.push_back({{"index", d.index},
                    {"name", d.name},
                    {"pci_path", d.pci_path},
                    {"guid", fmt::format("{:#x}", d.guid)},
                    {"speed_mbps", d.speed_mbps},
                    {"port", d.port},
                    {"latency_us", d.latency_us},
                    {"ptr_support", ptr},
                    {"gdr", d.cuda_memory()},
                    {"dmabuf", d.dmabuf()},
                    {"reg_is_global", d.reg_is_global},
                    {"force_flush", d.force_flush},
                    {"max_comms", d.max_comms},
                    {"max_recvs", d.max_recvs},
                    {"device_type", to_string(d.device_type)},
                    {"device_version", d.device_version},
                    {"vdevs", d.vdevs},
                    {"max_p2p_bytes", d.max_p2p_bytes},
                    {"max_coll_bytes", d.max_coll_bytes},
                    {"max_multi_request_size", d.max_multi_request_size}});
  }
  return {{"plugin",
           {{"path", p.path()}, {"name", p.name()}, {"abi_version", p.version()}, {"exported_versions", p.exported_versions()}}},
          {"devices", devs},
          {"gpu_memory", gpu_memory_verdict(p)}};
}

std::vector<std::vector<std::string>> properties_rows(const Plugin& p) {
  std::vector<std::vector<std::string>> rows{{"dev", "name", "pci path", "speed", "port", "memory", "gdr", "max comms",
                                              "max recvs", "type", "max p2p"}};
  for (const auto& d : p.devices()) {
    rows.push_back({std::to_string(d.index), d.name, d.pci_path.empty() ? "-" : d.pci_path,
                    d.speed_mbps > 0 ? fmt::format("{} Gb/s", d.speed_mbps / 1000.0) : "?", std::to_string(d.port),
                    ptr_support_text(d.ptr_support), d.cuda_memory() ? "yes" : "no", std::to_string(d.max_comms),
                    std::to_string(d.max_recvs), to_string(d.device_type),
                    d.max_p2p_bytes >= (1ull << 30) ? fmt::format("{} GiB", d.max_p2p_bytes >> 30)
                                                     : fmt::format("{} MiB", d.max_p2p_bytes >> 20)});
  }
  return rows;
}

NcclPluginReport report_nccl_plugin(const std::string& value) {
  NcclPluginReport r;
  r.resolution = resolve_like_nccl(value);
  if (!r.resolution.found) {
    r.gpu_memory = "no plugin: NCCL would use its internal IB/socket transports";
    return r;
  }
  try {
    LoadOptions o;
    o.plugin = r.resolution.path.empty() ? r.resolution.file : r.resolution.path;
    r.plugin = Plugin::load(o);
    r.gpu_memory = gpu_memory_verdict(*r.plugin);
  } catch (const Error& e) {
    r.load_error = e.what();
    r.gpu_memory = "unknown: the plugin did not load";
  }
  return r;
}

nlohmann::json NcclPluginReport::to_json() const {
  nlohmann::json j;
  j["nccl_would_load"] = resolution_json(resolution);
  if (plugin) {
    j.update(properties_json(*plugin));
  } else {
    j["plugin"] = nullptr;
    j["devices"] = nlohmann::json::array();
  }
  j["gpu_memory"] = gpu_memory;
  if (!load_error.empty()) j["load_error"] = load_error;
  return j;
}

}  // namespace p2pscope::net
