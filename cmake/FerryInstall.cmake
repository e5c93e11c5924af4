# What `cmake --install` puts under a prefix for C++ users (docs/install.md):
#   bin/ferry                          the CLI
#   lib/libferry.so[.0.1[.0]]          the engine, every layer in one shared library
#   include/ferry/...                  the public headers (they include only the standard library
#                                      and each other)
#   lib/cmake/ferry/                   find_package(ferry) -> the imported target ferry::ferry
#   lib/pkgconfig/ferry.pc             pkg-config --cflags --libs ferry
# examples/cpp-consumer is built against such a prefix by scripts/check-install.sh.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The layers' own objects (not their archives, which the tests and the module link), so that a
# symbol nothing inside the engine references - a public function only users call - is kept. The
# store backends come whole through ferry_storage_all, as everywhere (they register themselves).
set(_ferry_layers ferry_version ferry_base ferry_metrics ferry_image ferry_format ferry_storage
    ferry_order ferry_cache ferry_stream ferry_files ferry_loader)
set(_ferry_objects)
foreach(layer IN LISTS _ferry_layers)
  list(APPEND _ferry_objects "$<TARGET_OBJECTS:${layer}>")
endforeach()
add_library(ferry_library SHARED ${_ferry_objects})
# The archives for what the objects need from outside (curl, zstd, fmt, ...): every symbol they
# define is already in the objects, so the linker takes nothing more from them.
target_link_libraries(ferry_library PRIVATE ${_ferry_layers} ferry_storage_all)
target_include_directories(ferry_library INTERFACE
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(ferry_library INTERFACE cxx_std_20)
set_target_properties(ferry_library PROPERTIES
                      OUTPUT_NAME ferry
                      EXPORT_NAME ferry
                      VERSION ${PROJECT_VERSION}
                      SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
ferry_apply_flags(ferry_library)

install(TARGETS ferry_library EXPORT ferryTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(FERRY_BUILD_CLI)
  install(TARGETS ferry RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/ferry" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT ferryTargets NAMESPACE ferry:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
file(WRITE "${CMAKE_BINARY_DIR}/ferryConfig.cmake"
     "# find_package(ferry): the imported target ferry::ferry (libferry.so and its headers).\n"
     "include(\"\${CMAKE_CURRENT_LIST_DIR}/ferryTargets.cmake\")\n")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/ferryConfigVersion.cmake"
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_BINARY_DIR}/ferryConfig.cmake" "${CMAKE_BINARY_DIR}/ferryConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
# pkg-config's file, with the prefix that --install is given (not the configured one).
install(CODE "
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/ferry.pc\"
\"prefix=\${CMAKE_INSTALL_PREFIX}
libdir=\\\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\\\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: ferry
Description: Train from remote object stores as fast as from local disk (the C++ engine)
Version: ${PROJECT_VERSION}
Cflags: -I\\\${includedir} -std=c++20
Libs: -L\\\${libdir} -lferry
\")")
