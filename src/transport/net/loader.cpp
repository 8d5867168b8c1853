// Plugin files: resolution as NCCL does it, dlopen, exported versions.
#include "transport/net/loader.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/error.hpp"
#include "p2pscope/netplugin.hpp"

namespace p2pscope::net::detail {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why a file that exists is not loadable, in words (dlerror's text is terse).
std::string classify(const std::string& path, const std::string& dlerr) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (in && in.read(magic, 4) && std::memcmp(magic, "\x7f" "ELF", 4) != 0)
    return "not a shared object (no ELF header: is it a script, an archive or a text file?)";
  if (dlerr.find("wrong ELF class") != std::string::npos) return "built for another architecture (" + dlerr + ")";
  if (dlerr.find("cannot dynamically load") != std::string::npos || dlerr.find("executable") != std::string::npos)
    return "an executable, not a shared object";
  if (dlerr.find("undefined symbol") != std::string::npos || dlerr.find("cannot open shared object") != std::string::npos)
    return "its dependencies do not resolve (" + dlerr + "): check LD_LIBRARY_PATH";
  return "dlopen failed (" + dlerr + ")";
}

std::string lib_path(void* dl, const std::string& fallback) {
  link_map* lm = nullptr;
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) {
    std::error_code ec;
    auto p = std::filesystem::canonical(lm->l_name, ec);
    return ec ? std::string(lm->l_name) : p.string();
  }
  return fallback;
}

// Bare names: the directories of LD_LIBRARY_PATH as it is now (ld.so read it at
// process start; tests and `doctor` may have changed it since), then dlopen's own
// search (the start-time path, RUNPATH, ld.so.cache).
std::vector<std::string> expand(const std::string& name) {
  std::vector<std::string> out;
  if (name.find('/') == std::string::npos) {
    if (const char* lp = std::getenv("LD_LIBRARY_PATH")) {
      std::string s = lp;
      std::size_t pos = 0;
      while (pos <= s.size()) {
        std::size_t e = s.find(':', pos);
        if (e == std::string::npos) e = s.size();
        std::string dir = s.substr(pos, e - pos);
        if (!dir.empty()) {
          std::string f = dir + "/" + name;
          if (::access(f.c_str(), F_OK) == 0) out.push_back(f);
        }
        pos = e + 1;
      }
    }
  }
  out.push_back(name);
  return out;
}

}  // namespace

std::vector<std::string> candidates_for(const std::string& request) {
  if (request.empty()) return {"libnccl-net.so"};
  std::vector<std::string> out{request};
  bool lib_so = request.rfind("lib", 0) == 0 && ends_with(request, ".so");
  if (request.find('/') == std::string::npos && !lib_so) out.push_back("libnccl-net-" + request + ".so");
  return out;
}

const void* plugin_symbol(void* dl, int version) {
  return dlsym(dl, fmt::format("ncclNetPlugin_v{}", version).c_str());
}

OpenedLib open_plugin_file(const std::string& request) {
  std::vector<std::string> tried;
  for (const std::string& cand : candidates_for(request)) {
    for (const std::string& file : expand(cand)) {
      dlerror();
      void* dl = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!dl) {
        const char* e = dlerror();
        std::string err = e ? e : "unknown error";
        bool exists = file.find('/') != std::string::npos && ::access(file.c_str(), F_OK) == 0;
        if (exists) {
          // A file that is there but unusable is the answer, not a reason to go on.
          throw Error(fmt::format("net plugin {}: {}", file, classify(file, err)));
        }
        tried.push_back(fmt::format("{} (not found)", file));
        if (err.find("No such file") == std::string::npos && file.find('/') == std::string::npos)
          tried.back() = fmt::format("{} ({})", file, err);
        continue;
      }
      OpenedLib lib;
      lib.dl = dl;
      lib.file = file;
      lib.path = lib_path(dl, file);
      for (int v = 1; v <= 30; ++v)
        if (plugin_symbol(dl, v)) lib.versions.push_back(v);
      return lib;
    }
  }
  const char* lp = std::getenv("LD_LIBRARY_PATH");
  throw Error(fmt::format("net plugin '{}' not found: tried {} on LD_LIBRARY_PATH={} and the system library path; "
                          "pass --plugin /path/to/libnccl-net-NAME.so",
                          request.empty() ? "libnccl-net.so (NCCL_NET_PLUGIN unset)" : request,
                          fmt::join(tried, ", "), lp ? lp : "(unset)"));
}

}  // namespace p2pscope::net::detail
