# What `cmake --install` (make install) puts under the prefix:
#   include/superkernel.h                          the public API
#   include/superkernel_model.h                    whole models (src/model)
#   include/superkernel_checkpoint.h               checkpoint directories (src/checkpoint)
#   lib/libsuperkernel.so*, lib/libsuperkernel.a   shared and static library
#   lib/pkgconfig/superkernel.pc                   for pkg-config
#   lib/cmake/superkernel/                         for find_package(superkernel):
#       superkernel::superkernel (shared) and superkernel::superkernel_static
# (the sk tool installs itself into bin/, see tools/sk/CMakeLists.txt).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/superkernel)

install(TARGETS superkernel superkernel_static EXPORT superkernelTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/superkernel.h ${PROJECT_SOURCE_DIR}/include/superkernel_model.h
              ${PROJECT_SOURCE_DIR}/include/superkernel_checkpoint.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# CMake package: the exported targets, a config that finds their Threads
# dependency first, and a version file. Before 1.0 a minor release may
# break the API, so only the same major.minor is compatible.
install(EXPORT superkernelTargets NAMESPACE superkernel:: DESTINATION ${SK_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/superkernelConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/superkernelConfig.cmake
                              INSTALL_DESTINATION ${SK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/superkernelConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/superkernelConfig.cmake ${PROJECT_BINARY_DIR}/superkernelConfigVersion.cmake
        DESTINATION ${SK_CMAKE_DIR})

# pkg-config: prefix is found from the .pc file's own place (${pcfiledir}),
# so the file stays right under any `cmake --install --prefix` or DESTDIR;
# only an absolute CMAKE_INSTALL_LIBDIR pins the configured prefix.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(SK_PC_PKGCONFIG_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  file(RELATIVE_PATH sk_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" sk_up "${sk_up}")
  set(SK_PC_PREFIX "\${pcfiledir}/${sk_up}")
  set(SK_PC_PKGCONFIG_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(SK_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(SK_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# What a static link needs besides the library (the shared one carries it).
set(SK_PC_LIBS_PRIVATE "-lpthread -lm -lcjson")
foreach(lib ${CMAKE_DL_LIBS})
  string(APPEND SK_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/superkernel.pc.in ${PROJECT_BINARY_DIR}/superkernel.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/superkernel.pc DESTINATION ${SK_PC_PKGCONFIG_DIR})
