# Finds Nettle's SHA-256 (Debian package nettle-dev) for Loom's disk kernel cache and defines the imported
# target Nettle::nettle. The static library is preferred, so that Loom's binaries need no libnettle at run
# time (GPU machines often have no development packages); the shared one is used when no archive exists.
# Result variables: Nettle_FOUND, Nettle_INCLUDE_DIR, Nettle_LIBRARY.
find_path(Nettle_INCLUDE_DIR NAMES nettle/sha2.h)
find_library(Nettle_LIBRARY NAMES libnettle.a nettle)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Nettle REQUIRED_VARS Nettle_LIBRARY Nettle_INCLUDE_DIR)
mark_as_advanced(Nettle_INCLUDE_DIR Nettle_LIBRARY)
if(Nettle_FOUND AND NOT TARGET Nettle::nettle)
  add_library(Nettle::nettle UNKNOWN IMPORTED)
  set_target_properties(Nettle::nettle PROPERTIES IMPORTED_LOCATION "${Nettle_LIBRARY}"
                                                  INTERFACE_INCLUDE_DIRECTORIES "${Nettle_INCLUDE_DIR}")
endif()
