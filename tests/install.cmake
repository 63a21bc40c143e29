# make install, checked the way a user consumes it: the tree is installed
# into build/tests/install_test/prefix (fixture), then a small program is
# built against it with pkg-config and with find_package(superkernel), and
# the installed sk runs. See tests/install/check_install.sh.
set(SK_INSTALL_CHECK bash ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh)
set(SK_INSTALL_WORK ${PROJECT_BINARY_DIR}/tests/install_test)

add_test(NAME install_tree COMMAND ${SK_INSTALL_CHECK} install ${PROJECT_BINARY_DIR} ${SK_INSTALL_WORK} ${CMAKE_COMMAND})
set_tests_properties(install_tree PROPERTIES FIXTURES_SETUP sk_installed TIMEOUT 60)

add_test(NAME install_pkg_config
         COMMAND ${SK_INSTALL_CHECK} pkg-config ${SK_INSTALL_WORK} ${PROJECT_VERSION} ${CMAKE_C_COMPILER})
add_test(NAME install_find_package
         COMMAND ${SK_INSTALL_CHECK} find-package ${SK_INSTALL_WORK} ${PROJECT_VERSION} ${CMAKE_COMMAND}
                 ${CMAKE_C_COMPILER})
add_test(NAME install_sk_tool COMMAND ${SK_INSTALL_CHECK} sk-tool ${SK_INSTALL_WORK} ${PROJECT_VERSION})
set(sk_install_users install_pkg_config install_find_package install_sk_tool)
# pkg-config missing is the one honest skip (exit 77).
set_tests_properties(${sk_install_users} PROPERTIES FIXTURES_REQUIRED sk_installed TIMEOUT 60 SKIP_RETURN_CODE 77)
# A sanitizer build's libraries need the sanitizer's runtime in the programs
# built against them.
if(SK_SANITIZE)
  set_tests_properties(install_pkg_config install_find_package PROPERTIES
                       ENVIRONMENT "SK_CONSUMER_FLAGS=-fsanitize=${SK_SANITIZE}")
endif()
