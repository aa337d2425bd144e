# Real checkpoint metadata the tests and the planner benchmark use, all shipped in this repository:
# Qwen3-4B and Qwen3-30B-A3B from plans/, DeepSeek-V3 (BF16 and FP8, 14 MB of JSON) unpacked from
# tests/data/deepseek-v3-metadata.tar.xz (124 KB; copies of ../shared/models, see tests/data/README.md).
# RESHARD_TEST_MODELS is the folder that holds them, in the build tree.
set(RESHARD_TEST_MODELS ${PROJECT_BINARY_DIR}/test-models)
set(_archive ${PROJECT_SOURCE_DIR}/tests/data/deepseek-v3-metadata.tar.xz)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_archive})
if(NOT EXISTS ${RESHARD_TEST_MODELS}/deepseek-v3-fp8.json OR ${_archive} IS_NEWER_THAN ${RESHARD_TEST_MODELS}/deepseek-v3-fp8.json)
  file(ARCHIVE_EXTRACT INPUT ${_archive} DESTINATION ${RESHARD_TEST_MODELS})
endif()
foreach(_model qwen3-4b.json qwen3-30b-a3b.json)
  configure_file(${PROJECT_SOURCE_DIR}/plans/${_model} ${RESHARD_TEST_MODELS}/${_model} COPYONLY)
endforeach()
