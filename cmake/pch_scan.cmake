# The precompiled header only for the files that include what it holds.
#
# Loading the 106 MB precompiled header (nlohmann/json, fmt, <string>, <vector>) costs a
# file about 2 CPU-s; a file that includes nlohmann/json saves about 1.5 s with it, a file
# that does not loses about 2 s (bench/results/build.md, 2026-11-27). So each source
# keeps the precompiled header only when it reaches one of the heavy headers through the
# project's own headers; the others get SKIP_PRECOMPILE_HEADERS and include what they use.
#
# The scan follows #include lines (every one, whatever #if surrounds it: a file that
# might need json keeps the header) through the files under the source tree, at configure
# time. Each scanned file is a configure dependency, so the choice follows the files as
# they change: a file that starts to include json through a header gets the precompiled
# header at the next build. A wrong choice would only cost time: a file without the
# precompiled header includes json itself, and one with it still compiles.

# The project's include directories, where "x.hpp" and <p2pscope/x.hpp> are looked up.
set(P2PSCOPE_SCAN_DIRS ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)

# The project files FILE includes (resolved paths), and the outside headers it includes
# by name; cached for the configure run in global properties.
function(_p2pscope_direct_includes file out_local out_names)
  string(MD5 key "${file}")
  get_property(done GLOBAL PROPERTY P2PSCOPE_SCAN_${key} SET)
  if(NOT done)
    set(local)
    set(names)
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    get_filename_component(dir "${file}" DIRECTORY)
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "#[ \t]*include[ \t]*([<\"])([^>\"]+)[>\"]")
        continue()
      endif()
      set(name "${CMAKE_MATCH_2}")
      set(found)
      set(dirs ${P2PSCOPE_SCAN_DIRS})
      if(CMAKE_MATCH_1 STREQUAL "\"")
        list(PREPEND dirs "${dir}")
      endif()
      foreach(d IN LISTS dirs)
        if(EXISTS "${d}/${name}" AND NOT IS_DIRECTORY "${d}/${name}")
          get_filename_component(found "${d}/${name}" ABSOLUTE)
          break()
        endif()
      endforeach()
      if(found)
        list(APPEND local "${found}")
      else()
        list(APPEND names "${name}")
      endif()
    endforeach()
    set_property(GLOBAL PROPERTY P2PSCOPE_SCAN_${key} "${local}")
    set_property(GLOBAL PROPERTY P2PSCOPE_SCANN_${key} "${names}")
    set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  endif()
  get_property(l GLOBAL PROPERTY P2PSCOPE_SCAN_${key})
  get_property(n GLOBAL PROPERTY P2PSCOPE_SCANN_${key})
  set(${out_local} "${l}" PARENT_SCOPE)
  set(${out_names} "${n}" PARENT_SCOPE)
endfunction()

# p2pscope_pch_only_where_needed(TARGET HEADERS <name>...): the target's C++ sources that
# reach none of the named headers (as written in #include, e.g. nlohmann/json.hpp) get
# SKIP_PRECOMPILE_HEADERS.
function(p2pscope_pch_only_where_needed target)
  cmake_parse_arguments(A "" "" "HEADERS" ${ARGN})
  get_target_property(srcs ${target} SOURCES)
  foreach(src IN LISTS srcs)
    if(NOT src MATCHES "\\.(cpp|cc|cxx)$" OR src MATCHES "^\\$<")
      continue()
    endif()
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(seen "${src}")
    set(todo "${src}")
    set(needs OFF)
    while(todo AND NOT needs)
      list(POP_FRONT todo f)
      _p2pscope_direct_includes("${f}" local names)
      foreach(h IN LISTS A_HEADERS)
        if(h IN_LIST names)
          set(needs ON)
        endif()
      endforeach()
      foreach(l IN LISTS local)
        if(NOT l IN_LIST seen)
          list(APPEND seen "${l}")
          list(APPEND todo "${l}")
        endif()
      endforeach()
    endwhile()
    if(NOT needs)
      set_source_files_properties("${src}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
