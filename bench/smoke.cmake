# Runs a benchmark binary as a test (ctest -P): it must exit 0 (on_demand_bench exits 1 when
# any job's checks fail) and print, for every name in EXPECT, a result line carrying each
# counter in COUNTERS (a benchmark that errored or never ran prints none).
# -DBIN=... -DFILTER=... -DEXPECT="name;name" -DCOUNTERS="c;c"
execute_process(COMMAND ${BIN} --benchmark_filter=${FILTER} --benchmark_counters_tabular=false
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} exited ${rc}:\n${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
foreach(name IN LISTS EXPECT)
  set(found "")
  foreach(line IN LISTS lines)
    string(FIND "${line}" "${name}/" at)
    if(at EQUAL 0)
      set(found "${line}")
    endif()
  endforeach()
  if(found STREQUAL "")
    message(FATAL_ERROR "no result line for ${name}")
  endif()
  foreach(c IN LISTS COUNTERS)
    if(NOT found MATCHES " ${c}=")
      message(FATAL_ERROR "${name}: counter ${c} missing in: ${found}")
    endif()
  endforeach()
endforeach()
