# `cmake --install`: the library (gpt2lab::gpt2lab via find_package, or
# pkg-config gpt2lab), its public headers, the program, and what the
# program reads at run time (the report script) under share/gpt2lab.
include(CMakePackageConfigHelpers)

install(TARGETS gpt2lab_lib EXPORT gpt2labTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS gpt2lab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gpt2lab ${PROJECT_BINARY_DIR}/include/gpt2lab
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/report ${PROJECT_SOURCE_DIR}/tools/plot DESTINATION ${CMAKE_INSTALL_DATADIR}/gpt2lab/tools
        OPTIONAL PATTERN "__pycache__" EXCLUDE)
# What both import from the folder above them: the one metrics reader, and
# the study packer (the report reads a committed study's packed files).
install(FILES ${PROJECT_SOURCE_DIR}/tools/metrics_file.py ${PROJECT_SOURCE_DIR}/tools/study_pack.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gpt2lab/tools)
# GPT-2's tokenizer files, when scripts/setup.sh has fetched them: an
# installed gpt2lab then needs no source tree (core/data_dir.h).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/gpt2 DESTINATION ${CMAKE_INSTALL_DATADIR}/gpt2lab/data OPTIONAL
        FILES_MATCHING PATTERN "encoder.json" PATTERN "vocab.bpe")

set(GPT2LAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpt2lab)
install(EXPORT gpt2labTargets NAMESPACE gpt2lab:: DESTINATION ${GPT2LAB_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpt2labConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpt2labConfig.cmake INSTALL_DESTINATION ${GPT2LAB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpt2labConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpt2labConfig.cmake ${PROJECT_BINARY_DIR}/gpt2labConfigVersion.cmake
        DESTINATION ${GPT2LAB_CMAKE_DIR})

# pkg-config: a static library, so its dependencies are in Libs.
set(GPT2LAB_PC_LIBS "-lgpt2lab ${GPT2LAB_BLAS_LIB}")
if(GPT2LAB_DNNL)
  string(APPEND GPT2LAB_PC_LIBS " ${GPT2LAB_DNNL_LIB}")
endif()
if(GPT2LAB_MPI)
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND GPT2LAB_PC_LIBS " ${lib}")
  endforeach()
endif()
string(APPEND GPT2LAB_PC_LIBS " ${OpenMP_CXX_FLAGS}")
# From the .pc file's folder up to the prefix (lib/pkgconfig -> ../..).
file(RELATIVE_PATH GPT2LAB_PC_UP "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${PROJECT_SOURCE_DIR}/cmake/gpt2lab.pc.in ${PROJECT_BINARY_DIR}/gpt2lab.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gpt2lab.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
