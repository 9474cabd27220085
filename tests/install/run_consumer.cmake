# Installs a built Loom into a scratch prefix, checks the installed package, then configures, builds and
# runs tests/install/consumer against it (CMAKE_PREFIX_PATH only), expecting it to print "ok". The consumer
# checks that the package says what the build was configured with (LOOM_CUDA); CONSUMER_ARGS (optional, a
# list) go to its configuration, e.g. -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON for a host-only Loom.
#
#   cmake -DLOOM_BUILD_DIR=<build> -DCONSUMER_SOURCE_DIR=<tests/install/consumer> -DWORK_DIR=<scratch>
#         [-DCONSUMER_ARGS=<arguments>] -P run_consumer.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var LOOM_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${prefix} ${build})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run_consumer.cmake: ${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# 1. Install.
run("cmake --install" ${CMAKE_COMMAND} --install ${LOOM_BUILD_DIR} --prefix ${prefix})

# 2. The installed package: config, version and targets files; headers; no path into the source or build
#    tree, and no build-only target (loom_warnings) in the exported interface.
file(GLOB_RECURSE config_files ${prefix}/*/loomConfig.cmake)
if(NOT config_files)
  message(FATAL_ERROR "run_consumer.cmake: no loomConfig.cmake under ${prefix}")
endif()
list(GET config_files 0 config)
get_filename_component(config_dir ${config} DIRECTORY)
foreach(f loomConfigVersion.cmake loomTargets.cmake)
  if(NOT EXISTS ${config_dir}/${f})
    message(FATAL_ERROR "run_consumer.cmake: ${config_dir}/${f} is not installed")
  endif()
endforeach()
foreach(h loom/loom.hpp loom/ir/node.hpp loom/runtime/tensor.hpp loom/runtime/config.hpp loom/dsl/array.hpp)
  if(NOT EXISTS ${prefix}/include/${h})
    message(FATAL_ERROR "run_consumer.cmake: header ${h} is not installed")
  endif()
endforeach()
get_filename_component(source_root ${CONSUMER_SOURCE_DIR}/../../.. ABSOLUTE)
get_filename_component(build_root ${LOOM_BUILD_DIR} ABSOLUTE)
file(GLOB exported ${config_dir}/*.cmake)
foreach(f ${exported})
  file(READ ${f} text)
  foreach(bad "${source_root}/" "${build_root}/" "loom_warnings")
    string(FIND "${text}" "${bad}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "run_consumer.cmake: installed ${f} mentions '${bad}'")
    endif()
  endforeach()
endforeach()

# 3. Configure and build the consumer with Loom's compiler and generator, finding only the installed package.
load_cache(${LOOM_BUILD_DIR} READ_WITH_PREFIX loom_ CMAKE_CXX_COMPILER CMAKE_GENERATOR CMAKE_MAKE_PROGRAM
           CMAKE_BUILD_TYPE CUDAToolkit_ROOT LOOM_CUDA)
set(args -S ${CONSUMER_SOURCE_DIR} -B ${build} -DCMAKE_PREFIX_PATH=${prefix}
         -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_CXX_COMPILER=${loom_CMAKE_CXX_COMPILER}
         -DEXPECT_LOOM_CUDA=${loom_LOOM_CUDA} ${CONSUMER_ARGS})
if(loom_CMAKE_GENERATOR)
  list(APPEND args -G ${loom_CMAKE_GENERATOR})
endif()
if(loom_CMAKE_MAKE_PROGRAM)
  list(APPEND args -DCMAKE_MAKE_PROGRAM=${loom_CMAKE_MAKE_PROGRAM})
endif()
if(loom_CMAKE_BUILD_TYPE)
  list(APPEND args -DCMAKE_BUILD_TYPE=${loom_CMAKE_BUILD_TYPE})
endif()
if(loom_CUDAToolkit_ROOT)
  list(APPEND args -DCUDAToolkit_ROOT=${loom_CUDAToolkit_ROOT})
endif()
run("configuring the consumer" ${CMAKE_COMMAND} ${args})
run("building the consumer" ${CMAKE_COMMAND} --build ${build})

# 4. Run it.
run("running the consumer" ${build}/loom_consumer)
if(NOT run_output MATCHES "^ok\n?$")
  message(FATAL_ERROR "run_consumer.cmake: the consumer printed '${run_output}', expected 'ok'")
endif()
message(STATUS "install/consumer_project: installed to ${prefix}, consumer built and printed ok")
