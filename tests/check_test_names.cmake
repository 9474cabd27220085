# Fails when a test case of the executables in EXES (a |-separated list) has a name that CTest cannot carry:
# doctest_discover_tests makes one CTest test per doctest case, and CMake cuts a name at ';' (a list
# separator), so the cut name selects no case and the test passes without running anything.
#   cmake -DEXES="a|b" -P check_test_names.cmake
string(REPLACE "|" ";" exes "${EXES}")
set(bad "")
foreach(exe IN LISTS exes)
  execute_process(COMMAND "${exe}" --list-test-cases --no-version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${exe} --list-test-cases failed (${rc})")
  endif()
  string(REPLACE ";" "<semicolon>" out "${out}")
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line MATCHES "<semicolon>")
      string(REPLACE "<semicolon>" ";" line "${line}")
      string(APPEND bad "\n  ${exe}: ${line}")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "test case names with ';' (CTest would run nothing for them; use ','):${bad}")
endif()
message(STATUS "every test case name can be a CTest test")
